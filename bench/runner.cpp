// bench/runner.cpp: child processes, resume, Ctrl-C, parity and the summary
// (see runner.h).
#include "bench/runner.h"

#include <signal.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/mfu.h"
#include "bench/peers.h"
#include "bench/roofline.h"
#include "common/atomic_file.h"
#include "reports/report.h"
#include "reports/report_loader.h"
#include "reports/stats.h"
#include "reports/table.h"

namespace ladder {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::atomic<bool> g_interrupted{false};
// The running children (one, or one per rank of a ddp cell), for Ctrl-C.
constexpr int kMaxChildren = 256;
std::atomic<pid_t> g_children[kMaxChildren];
std::atomic<int> g_n_children{0};

void on_interrupt(int sig) {
  g_interrupted = true;
  const int n = g_n_children.load();
  for (int i = 0; i < n; ++i) {
    const pid_t child = g_children[i].load();
    if (child > 0) kill(child, sig);  // async-signal-safe
  }
}

class InterruptHandler {
 public:
  InterruptHandler() {
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~InterruptHandler() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

std::optional<json> read_json(const fs::path& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  try {
    return json::parse(f);
  } catch (const json::parse_error&) {
    return std::nullopt;
  }
}

fs::path cell_dir(const RunnerOptions& o, const Cell& c) { return fs::path(o.run_dir) / c.id; }
// Repeat 1 of a cell (every run has it) writes <cell>/report.json; repeat k
// of --repeat N writes <cell>/repeat<k>/report.json.
std::string repeat_subdir(int repeat) { return repeat <= 1 ? "" : fmt::format("repeat{}", repeat); }
fs::path cell_report(const RunnerOptions& o, const Cell& c, int repeat = 1) {
  return cell_dir(o, c) / repeat_subdir(repeat) / "report.json";
}
// A process's name in progress lines and the summary's `missing`: "fp32",
// "fp32/repeat2".
std::string job_name(const Cell& c, int repeat) { return repeat <= 1 ? c.id : c.id + "/" + repeat_subdir(repeat); }
// The report's path relative to the run directory, as the summary lists it.
std::string relative_report(const Cell& c, int repeat) {
  return (fs::path(c.id) / repeat_subdir(repeat) / "report.json").string();
}

bool report_complete(const RunnerOptions& o, const Cell& c, int repeat = 1) {
  auto r = read_json(cell_report(o, c, repeat));
  return r && r->value("status", "") == "ok";
}

struct ChildOutcome {
  bool exited = false;
  int exit_code = 0;
  int signal = 0;
  bool timed_out = false;
  double seconds = 0;
};

// A free TCP port on loopback for a ddp cell's rendezvous.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(fmt::format("socket: {}", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error(fmt::format("cannot find a free port: {}", std::strerror(errno)));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// Runs one process per entry of `envs` (the same args, its own environment
// additions), waits for all of them and returns their outcomes in order.
// After `timeout_s` all are stopped (SIGTERM, then SIGKILL 10 s later). Once
// one fails, the rest get `grace_s` to end on their own before they are
// stopped too: a ddp rank must notice a dead peer within its timeout.
std::vector<ChildOutcome> run_children(const std::vector<std::string>& args, const std::vector<EnvVars>& envs,
                                       double timeout_s, double grace_s) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const size_t n = envs.size();
  if (n > size_t(kMaxChildren)) throw std::runtime_error(fmt::format("at most {} ranks", kMaxChildren));
  std::vector<pid_t> pids(n, 0);
  std::vector<ChildOutcome> out(n);
  std::vector<bool> running(n, false);
  for (size_t i = 0; i < n; ++i) {
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
    if (pid == 0) {
      for (const auto& [k, v] : envs[i]) {
        if (v.empty()) unsetenv(k.c_str()); else setenv(k.c_str(), v.c_str(), 1);
      }
      execv(argv[0], argv.data());
      std::fprintf(stderr, "ladder: cannot exec %s: %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
    pids[i] = pid;
    running[i] = true;
    g_children[i] = pid;
    g_n_children = int(i + 1);
  }
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  double deadline = timeout_s;
  bool term_sent = false;
  double term_at = 0;
  size_t left = n;
  while (left > 0) {
    for (size_t i = 0; i < n; ++i) {
      if (!running[i]) continue;
      int status = 0;
      if (waitpid(pids[i], &status, WNOHANG) != pids[i]) continue;
      running[i] = false;
      --left;
      out[i].seconds = elapsed();
      if (WIFEXITED(status)) {
        out[i].exited = true;
        out[i].exit_code = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        out[i].signal = WTERMSIG(status);
      }
      if (!(out[i].exited && out[i].exit_code == 0)) deadline = std::min(deadline, elapsed() + grace_s);
    }
    if (left == 0) break;
    if (!term_sent && elapsed() > deadline) {
      for (size_t i = 0; i < n; ++i)
        if (running[i]) {
          out[i].timed_out = true;
          kill(pids[i], SIGTERM);
        }
      term_sent = true;
      term_at = elapsed();
    }
    if (term_sent && elapsed() - term_at > 10)
      for (size_t i = 0; i < n; ++i)
        if (running[i]) kill(pids[i], SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  g_n_children = 0;
  return out;
}

// What happened to a child, in words.
std::string describe_outcome(const ChildOutcome& out) {
  if (out.timed_out) return fmt::format("stopped after {:.1f} s (no result in time)", out.seconds);
  if (out.signal) return fmt::format("killed by signal {} ({}) after {:.1f} s", out.signal, strsignal(out.signal), out.seconds);
  return fmt::format("exited with code {} after {:.1f} s", out.exit_code, out.seconds);
}

// A report for a cell whose process died without writing one.
// `extra` adds fields to its failure section (a ddp cell's per-rank outcomes).
void write_failure(const RunnerOptions& o, const Cell& c, int repeat, const std::string& status,
                   const std::string& reason, const ChildOutcome& out, const json& extra = json::object()) {
  const std::string now = utc_now_iso8601();
  json report = rung_report_header(c.cfg, o.run_id, o.argv, now);
  report.update({{"status", status},
                 {"finished_at", now},
                 {"failure", {{"reason", reason},
                              {"exit_code", out.exited ? json(out.exit_code) : json()},
                              {"signal", out.signal ? json(strsignal(out.signal)) : json()},
                              {"seconds", out.seconds}}}});
  report["failure"].update(extra);
  if (repeat > 1) report["failure"]["repeat"] = repeat;
  write_report(cell_report(o, c, repeat).string(), report);
}

void write_matrix_json(const std::vector<Cell>& cells, const RunnerOptions& o) {
  json j = {{"schema_version", kSchemaVersion},
            {"kind", "ladder.matrix"},
            {"run_id", o.run_id},
            {"mode", o.mode},
            {"parity_steps", o.parity_steps},
            {"repeats", o.repeats},
            {"peers", {{"names", o.peers}, {"source", o.peers_source}}},
            {"created_at", utc_now_iso8601()},
            {"argv", o.argv},
            {"cells", cells_to_json(cells)}};
  write_file_atomically((fs::path(o.run_dir) / "matrix.json").string(), j.dump(2) + "\n");
}

std::vector<double> series(const json& report, const char* column) {
  std::vector<double> out;
  for (const char* key : {"warmup_steps", "steps"})
    for (const auto& v : report[key][column]) out.push_back(v.is_number() ? v.get<double>() : NAN);
  return out;
}

// Largest relative difference over the first k entries (inf if any is NaN).
double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b, size_t k) {
  double worst = 0;
  for (size_t i = 0; i < k; ++i) {
    const double rel = std::fabs(a[i] - b[i]) / std::max(std::fabs(b[i]), 1e-12);
    worst = std::isnan(rel) ? INFINITY : std::max(worst, rel);
  }
  return worst;
}

// Compares the subject's first losses and gradient norms with the
// reference's. Early losses sit near ln V whatever the model does, so the
// gradient norm, which reacts to any change in the maths, is checked too.
json check_parity(const Cell& cell, const std::map<std::string, const Cell*>& by_id,
                  const RunnerOptions& o) {
  auto subject = cell.parity_ref.empty() ? std::nullopt : read_json(cell_report(o, *by_id.at(cell.parity_subject)));
  // The class of the precision the subject really ran in (a switch that was
  // not effective on this device does not loosen the tolerance).
  const Switches numerics =
      subject ? numerics_in_effect(cell.cfg.sw, subject->value("switches", json::object())) : cell.cfg.sw;
  const double rtol = parity_rtol(numerics);
  json p = {{"class", parity_class(numerics)}, {"rtol", rtol},
            {"reference", cell.parity_ref}, {"subject", cell.parity_subject}};
  if (cell.parity_ref.empty()) {
    p["status"] = "baseline";
    return p;
  }
  auto ref = read_json(cell_report(o, *by_id.at(cell.parity_ref)));
  if (!subject || !ref || subject->value("status", "") != "ok" || ref->value("status", "") != "ok") {
    p["status"] = "unavailable";
    p["reason"] = fmt::format("needs complete reports of '{}' and '{}'", cell.parity_subject, cell.parity_ref);
    return p;
  }
  const auto loss_a = series(*subject, "loss"), loss_b = series(*ref, "loss");
  const auto norm_a = series(*subject, "grad_norm"), norm_b = series(*ref, "grad_norm");
  const size_t k = std::min<size_t>({size_t(o.parity_steps), loss_a.size(), loss_b.size()});
  const double loss_diff = max_rel_diff(loss_a, loss_b, k);
  const double norm_diff = max_rel_diff(norm_a, norm_b, k);
  auto finite_or_null = [](double v) { return std::isfinite(v) ? json(v) : json(); };
  p["steps_compared"] = k;
  p["max_rel_diff"] = finite_or_null(loss_diff);
  p["grad_norm_max_rel_diff"] = finite_or_null(norm_diff);
  p["subject_losses"] = std::vector<double>(loss_a.begin(), loss_a.begin() + long(k));
  p["reference_losses"] = std::vector<double>(loss_b.begin(), loss_b.begin() + long(k));
  const bool loss_ok = loss_diff <= rtol, norm_ok = norm_diff <= rtol;  // false for inf (a NaN)
  // The quantity that decides the verdict: the one that failed, or the
  // closer to its tolerance; named with its value in the table and gpu-smoke.
  const bool norm_decides = norm_ok == loss_ok ? !(norm_diff <= loss_diff) : !norm_ok;
  const char* decides = norm_decides ? "grad_norm" : "loss";
  const double worst = norm_decides ? norm_diff : loss_diff, other = norm_decides ? loss_diff : norm_diff;
  p["worst_quantity"] = decides;
  p["worst_rel_diff"] = finite_or_null(worst);
  p["status"] = loss_ok && norm_ok ? "pass" : "fail";
  p["failed_quantity"] = loss_ok && norm_ok ? json() : json(decides);
  p["reason"] = fmt::format("{} max rel diff {:.2e} {} rtol {:.0e} ({} {:.2e}) over {} steps",
                            norm_decides ? "grad norm" : "loss", worst, worst <= rtol ? "<=" : ">", rtol,
                            norm_decides ? "loss" : "grad norm", other, k);
  return p;
}

// What every summary row has, whatever happened to the cell.
json row_base(const Cell& c, const std::string& status, const json& parity) {
  return {{"cell", c.id},    {"preset", c.cfg.preset}, {"batch", c.cfg.batch},  {"seq", c.cfg.seq},
          {"rung", c.cfg.rung}, {"switches", c.cfg.sw},   {"status", status},      {"parity", parity}};
}

double median_of(std::vector<double> v) { return summarize(std::move(v)).median; }

// Was the machine quiet while a cell ran? On a quiet machine dt varies by a
// few percent between the steps of a process and between processes (2-3 % CV
// for fp32 gpt2-124m B4 T64 on this repository's 2-core VM); past the limit,
// a difference of that size between two runs is the machine's, not the code's.
constexpr double kQuietCvLimit = 0.05;

json noise_verdict(double steps_cv, std::optional<double> processes_cv) {
  const bool quiet = steps_cv <= kQuietCvLimit && (!processes_cv || *processes_cv <= kQuietCvLimit);
  return {{"quiet", quiet},
          {"cv_limit", kQuietCvLimit},
          {"steps_cv", steps_cv},
          {"processes_cv", processes_cv ? json(*processes_cv) : json()},
          {"basis", "CV of dt over a process's measured steps (the median over processes) and, with --repeat, "
                    "over the per-process medians; quiet when both are within cv_limit"}};
}

// A cell's row: its figures from the one report, or with --repeat N the
// median over the N processes of each one's median (a process is the
// independent sample; its steps are not), with the per-process medians
// listed. Peak memory is the largest of the processes'.
json summary_row(const Cell& c, const std::vector<json>& reports, const json& parity) {
  const json& first = reports.front();
  size_t bad = 0;
  while (bad < reports.size() && reports[bad].value("status", "missing") == "ok") ++bad;
  const json& deciding = bad < reports.size() ? reports[bad] : first;
  json row = row_base(c, deciding.value("status", "missing"), parity);
  row["report"] = relative_report(c, 1);
  if (reports.size() > 1) {
    json files = json::array();
    for (size_t k = 0; k < reports.size(); ++k) files.push_back(relative_report(c, int(k) + 1));
    row["repeats"] = {{"count", reports.size()}, {"reports", files}};
    if (bad < reports.size()) row["repeats"]["failed_repeat"] = bad + 1;
  }
  if (deciding.contains("failure")) row["failure"] = deciding["failure"];
  if (row["status"] != "ok") return row;
  std::vector<double> dt, dt_cv, tok, mfu_roof, mfu_sheet;
  int64_t peak = 0;
  for (const auto& r : reports) {
    const auto& s = r["summary"];
    dt.push_back(s["dt_ms"]["median"].get<double>());
    dt_cv.push_back(s["dt_ms"]["cv"].get<double>());
    tok.push_back(s["tokens_per_s"]["median"].get<double>());
    mfu_roof.push_back(r["mfu"]["measured_roofline"]["mfu_pct"].get<double>());
    if (r["mfu"]["datasheet"]["mfu_pct"].is_number()) mfu_sheet.push_back(r["mfu"]["datasheet"]["mfu_pct"].get<double>());
    peak = std::max(peak, r["memory"]["measured"]["peak_bytes"].get<int64_t>());
  }
  const size_t n = reports.size();
  const double steps_cv = median_of(dt_cv);
  const std::optional<double> processes_cv = n > 1 ? std::optional<double>(summarize(dt).cv) : std::nullopt;
  row["dt_ms_median"] = median_of(dt);
  row["dt_ms_cv"] = steps_cv;
  row["tokens_per_s_median"] = median_of(tok);
  row["sample"] = n == 1 ? fmt::format("the median of {} measured steps of one process",
                                       first["steps"]["dt_ms"].size())
                         : fmt::format("the median of {} per-process medians", n);
  if (processes_cv) {
    row["dt_ms_process_medians"] = dt;
    row["dt_ms_process_cv"] = *processes_cv;
  }
  row["noise"] = noise_verdict(steps_cv, processes_cv);
  if (first["timing"].contains("data_pct_of_dt")) row["data_pct_of_dt"] = first["timing"]["data_pct_of_dt"];
  row["mfu_pct_datasheet"] = mfu_sheet.size() == n ? json(median_of(mfu_sheet)) : json();
  row["mfu_pct_measured_roofline"] = median_of(mfu_roof);
  row["peak_bytes"] = peak;
  row["peak_kind"] = first["memory"]["measured"]["peak_kind"];
  row["op_counts"] = first["op_counts"];
  json effective = json::object();
  for (const auto& [name, sw] : first["switches"].items())
    if (sw.value("enabled", false)) effective[name] = sw.value("effective", false);
  row["effective"] = effective;
  return row;
}

}  // namespace

std::vector<Cell> load_run_dir(const std::string& run_dir, RunnerOptions& opts) {
  const fs::path path = fs::path(run_dir) / "matrix.json";
  auto j = read_json(path);
  if (!j || j->value("kind", "") != "ladder.matrix")
    throw ConfigError(fmt::format("--resume: '{}' is not a run directory (no readable matrix.json)", run_dir));
  std::vector<Cell> cells;
  try {
    for (const auto& c : (*j)["cells"]) {
      Cell cell;
      cell.id = c.at("id").get<std::string>();
      cell.role = c.at("role").get<std::string>();
      cell.cfg = c.at("config").get<RunConfig>();
      cell.runnable = c.at("runnable").get<bool>();
      cell.not_runnable_reason = c.at("not_runnable_reason").get<std::string>();
      cell.parity_ref = c.at("parity_ref").get<std::string>();
      cell.parity_subject = c.at("parity_subject").get<std::string>();
      cell.peer = c.value("peer", "");
      cells.push_back(cell);
    }
    opts.run_id = j->at("run_id").get<std::string>();
    opts.mode = j->at("mode").get<std::string>();
    opts.parity_steps = j->at("parity_steps").get<int64_t>();
    opts.repeats = j->value("repeats", 1);
    opts.peers.clear();
    opts.peers_source = "none recorded (a run from before --peers)";
    if (j->contains("peers")) {
      opts.peers = j->at("peers").at("names").get<std::vector<std::string>>();
      opts.peers_source = j->at("peers").at("source").get<std::string>();
    }
  } catch (const json::exception& e) {
    throw ConfigError(fmt::format("--resume: '{}' is malformed: {}", path.string(), e.what()));
  }
  return cells;
}

namespace {

// One child run: a cell, and which of its --repeat processes this is.
struct Job {
  const Cell* cell;
  int repeat;
};

// Before a job's child runs: its report directory, the cell's config.json
// (what the child reads), and no stale report (a report exists only once the
// child, or the runner for it, wrote a complete one). Returns {report, config}.
std::pair<fs::path, fs::path> prepare_job(const Job& job, const RunnerOptions& o) {
  const fs::path report_path = cell_report(o, *job.cell, job.repeat);
  fs::create_directories(report_path.parent_path());
  const fs::path config_path = cell_dir(o, *job.cell) / "config.json";
  write_file_atomically(config_path.string(), json(job.cell->cfg).dump(2) + "\n");
  fs::remove(report_path);
  return {report_path, config_path};
}

// Runs one cell's process (or its ranks), and records a report for a child
// that died without one. Appends to `missing` when Ctrl-C stopped it.
void run_job(const Job& job, const std::string& progress, const std::string& roofline_file,
             const RunnerOptions& o, std::vector<std::string>& missing) {
  const Cell& cell = *job.cell;
  const auto [report_path, config_path] = prepare_job(job, o);
  // Parity references run once; measured cells say which of their processes this is.
  const std::string label = cell.role == "measure" && o.repeats > 1
                                ? fmt::format("{} #{}/{}", cell.id, job.repeat, o.repeats) : cell.id;
  if (!o.quiet)
    fmt::print(stderr, "{} {} ({}{})\n", progress, label, cell.role == "parity" ? "parity reference, " : "",
               cell.cfg.device);
  std::vector<std::string> args = {o.exe, "measure", "--config", config_path.string(),
                                   "--report", report_path.string(), "--label", label,
                                   "--run-id", o.run_id};
  if (!roofline_file.empty()) {
    args.push_back("--roofline");
    args.push_back(roofline_file);
  }
  if (o.quiet) args.push_back("--quiet");
  // A ddp cell is one process per rank, launched as torchrun would.
  const int world = cell.cfg.world_size;
  std::vector<EnvVars> envs(static_cast<size_t>(world));
  if (cell.cfg.sw.ddp) {
    const std::string port = std::to_string(free_port());
    for (int r = 0; r < world; ++r) {
      envs[size_t(r)] = {{"RANK", std::to_string(r)}, {"LOCAL_RANK", std::to_string(r)},
                         {"WORLD_SIZE", std::to_string(world)}, {"LOCAL_WORLD_SIZE", std::to_string(world)},
                         {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}};
      // An outer launcher's variables would describe another job.
      for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                            "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
                            "SLURM_NTASKS_PER_NODE"})
        envs[size_t(r)].emplace_back(v, "");
    }
  }
  // After a rank fails the others must notice within their timeout (plus
  // the few seconds of the census that names the missing rank).
  const double grace_s = cell.cfg.ddp.timeout_s + 10;
  const std::vector<ChildOutcome> outs = run_children(args, envs, o.rung_timeout_s, grace_s);
  // Rank 0 writes the report; the first rank to fail is the one to name.
  size_t first_bad = 0;
  bool any_bad = false;
  for (size_t r = 0; r < outs.size(); ++r) {
    const bool bad = !(outs[r].exited && outs[r].exit_code == 0);
    if (bad && (!any_bad || outs[r].seconds < outs[first_bad].seconds)) first_bad = r;
    any_bad = any_bad || bad;
  }
  const ChildOutcome& out = any_bad ? outs[first_bad] : outs[0];
  // With several ranks, the failure says which rank failed first and how each ended.
  json rank_failure = json::object();
  if (world > 1) {
    json ranks = json::array();
    for (size_t r = 0; r < outs.size(); ++r)
      ranks.push_back({{"rank", r}, {"outcome", describe_outcome(outs[r])}, {"seconds", outs[r].seconds}});
    rank_failure = {{"first_failed_rank", first_bad}, {"ranks", ranks}};
  }
  if (g_interrupted) {
    // A child stopped by Ctrl-C leaves no report: the cell is missing.
    if (!report_complete(o, cell, job.repeat)) {
      fs::remove(report_path);
      missing.push_back(job_name(cell, job.repeat));
    }
    return;
  }
  auto report = read_json(report_path);
  const bool ok = !any_bad && report && report->value("status", "") == "ok";
  if (ok) return;
  const std::string who = world > 1 ? fmt::format("rank {} of {}: ", first_bad, world) : "";
  if (report && report->value("status", "ok") != "ok") {
    // The child recorded its own failure (an OOM, an exception); add how each rank ended.
    if (world > 1) {
      (*report)["failure"].update(rank_failure);
      write_report(report_path.string(), *report);
    }
    if (!o.quiet) fmt::print(stderr, "[{}] {}: {}{}\n", label, (*report)["status"].get<std::string>(),
                             world > 1 ? fmt::format("first failure: rank {} {}; ", first_bad, describe_outcome(out)) : "",
                             (*report)["failure"].value("message", ""));
    return;
  }
  const std::string status = out.timed_out ? "timeout" : "crashed";
  const std::string reason =
      who + (out.timed_out ? fmt::format("no result within --rung-timeout {} s", o.rung_timeout_s)
             : out.signal  ? fmt::format("killed by signal {} ({})", out.signal, strsignal(out.signal))
             : report      ? fmt::format("exited with code {}", out.exit_code)
                           : fmt::format("exited with code {} without a report", out.exit_code));
  write_failure(o, cell, job.repeat, status, reason, out, rank_failure);
  if (!o.quiet) fmt::print(stderr, "[{}] {}: {}; the matrix carries on\n", label, status, reason);
}

// A peer's report when its process left none, or could not start.
void write_peer_failure(const RunnerOptions& o, const Cell& c, int repeat, const std::string& status,
                        const std::string& reason, const ChildOutcome& out) {
  const std::string now = utc_now_iso8601();
  json report = rung_report_header(c.cfg, o.run_id, o.argv, now);
  report.update({{"status", status},
                 {"finished_at", now},
                 {"peer", {{"name", c.peer}, {"program", "scripts/peer.py"}, {"torch_version", nullptr},
                           {"what", "a PyTorch peer (bench/peers.h)"}}},
                 {"failure", {{"reason", reason},
                              {"exit_code", out.exited ? json(out.exit_code) : json()},
                              {"signal", out.signal ? json(strsignal(out.signal)) : json()},
                              {"seconds", out.seconds}}}});
  if (repeat > 1) report["failure"]["repeat"] = repeat;
  write_report(cell_report(o, c, repeat).string(), report);
}

// Runs one peer's scripts/peer.py child and completes its partial report
// into <cell>/report.json (complete_peer_report: summary, FLOPs, MFU against
// the run's roofline). No Python or torch: "skipped"; a compile error or
// an exception: "failed" with the peer's message; the matrix carries on.
void run_peer_job(const Job& job, const std::string& progress, const std::string& roofline_file,
                  const RunnerOptions& o, std::vector<std::string>& missing) {
  const Cell& cell = *job.cell;
  const auto [report_path, config_path] = prepare_job(job, o);
  const fs::path partial_path = report_path.parent_path() / "peer_partial.json";
  fs::remove(partial_path);
  const std::string label = o.repeats > 1 ? fmt::format("{} #{}/{}", peer_display_name(cell.id), job.repeat, o.repeats)
                                          : peer_display_name(cell.id);
  if (!o.quiet) fmt::print(stderr, "{} {} (PyTorch peer, {})\n", progress, label, cell.cfg.device);
  PeerCommand cmd = peer_command(cell, config_path.string(), partial_path.string(), label, o.run_id, o.quiet);
  // A peer computes in the precision its rung would here: on a CPU whose
  // bf16 matmuls the run measured as emulated, in fp32 (RunConfig::bf16_applied).
  if (cmd.skip_reason.empty() && cell.cfg.sw.bf16 && cell.cfg.device == "cpu") {
    RunConfig as_run = cell.cfg;
    if (!roofline_file.empty()) resolve_cpu_bf16(as_run, read_json_file(roofline_file), torch::Device(torch::kCPU));
    if (const std::string why = as_run.bf16_off_reason(); !why.empty()) {
      cmd.args.push_back("--bf16-off-because");
      cmd.args.push_back(why);
    }
  }
  if (!cmd.skip_reason.empty()) {
    write_peer_failure(o, cell, job.repeat, "skipped", cmd.skip_reason, ChildOutcome{});
    if (!o.quiet) fmt::print(stderr, "[{}] skipped: {}\n", label, cmd.skip_reason);
    return;
  }
  const ChildOutcome out = run_children(cmd.args, {EnvVars{}}, o.rung_timeout_s, 0).front();
  if (g_interrupted) {
    // Stopped by Ctrl-C: the cell is missing (--resume runs it again).
    if (!report_complete(o, cell, job.repeat)) {
      fs::remove(report_path);
      missing.push_back(job_name(cell, job.repeat));
    }
    fs::remove(partial_path);
    return;
  }
  auto partial = read_json(partial_path);
  const std::string status = partial ? partial->value("status", "") : "";
  if (partial && status == "ok" && out.exited && out.exit_code == 0) {
    try {
      write_report(report_path.string(), complete_peer_report(*partial, cell.cfg, roofline_file));
      fs::remove(partial_path);
      return;
    } catch (const nlohmann::json::exception& e) {
      write_peer_failure(o, cell, job.repeat, "failed", fmt::format("its report is malformed: {}", e.what()), out);
    } catch (const ConfigError& e) {
      write_peer_failure(o, cell, job.repeat, "failed", fmt::format("its report is incomplete: {}", e.what()), out);
    } catch (const std::runtime_error& e) {
      write_peer_failure(o, cell, job.repeat, "failed", fmt::format("its report is incomplete: {}", e.what()), out);
    }
  } else if (partial && !status.empty() && status != "ok") {
    // peer.py recorded its own failure (a compile error, no torch): keep it, with how the process ended.
    (*partial)["failure"]["exit_code"] = out.exited ? json(out.exit_code) : json();
    (*partial)["failure"]["seconds"] = out.seconds;
    if (job.repeat > 1) (*partial)["failure"]["repeat"] = job.repeat;
    write_report(report_path.string(), *partial);
  } else {
    const std::string st = out.timed_out ? "timeout" : out.signal ? "crashed" : "failed";
    const std::string reason =
        out.timed_out ? fmt::format("no result within --rung-timeout {} s", o.rung_timeout_s)
        : out.signal  ? fmt::format("killed by signal {} ({})", out.signal, strsignal(out.signal))
                      : fmt::format("{} {} exited with code {} without a report", cmd.args[0], cmd.args[1],
                                    out.exit_code);
    write_peer_failure(o, cell, job.repeat, st, reason, out);
  }
  fs::remove(partial_path);
  if (!o.quiet) {
    auto r = read_json(report_path);
    const json failure = r && r->contains("failure") ? (*r)["failure"] : json::object();
    // The message's last line: a traceback ends with the exception.
    std::string message = failure.value("message", "");
    while (!message.empty() && message.back() == '\n') message.pop_back();
    message = message.substr(message.rfind('\n') == std::string::npos ? 0 : message.rfind('\n') + 1);
    fmt::print(stderr, "[{}] {}: {}{}; the matrix carries on\n", label, r ? r->value("status", "?") : "?",
               failure.value("reason", ""), message.empty() ? "" : ": " + message.substr(0, 300));
  }
}

// The device's matmul ceiling, measured once before the rungs by a `ladder
// roofline` child into <run_dir>/roofline.json (kept on --resume). Sets
// `file` to it, or leaves it empty when the probe failed: each rung then
// probes in its own process, and the summary says why.
json run_roofline(const std::vector<Cell>& cells, const RunnerOptions& o, std::string& file) {
  file.clear();
  const Cell* first = nullptr;
  for (const auto& c : cells)
    if (c.runnable && c.role == "measure" && !first) first = &c;
  if (!first) return {{"status", "not_run"}, {"reason", "no runnable rung"}};
  const fs::path path = fs::path(o.run_dir) / "roofline.json";
  auto saved = read_json(path);
  if (!(saved && saved->value("kind", "") == "ladder.roofline")) {
    if (!o.quiet) fmt::print(stderr, "[roofline] measuring {}'s matmul ceiling (fp32, tf32, bf16), once for the run\n",
                             first->cfg.device);
    std::vector<std::string> args = {o.exe, "roofline", "--device", first->cfg.device, "--out", path.string(), "--quiet"};
    if (first->cfg.threads > 0) {
      // CPU ddp ranks split the threads; together they use the host's.
      args.push_back("--threads");
      args.push_back(std::to_string(first->cfg.threads));
    }
    const ChildOutcome out = run_children(args, {EnvVars{}}, std::min(o.rung_timeout_s, 600.0), 0).front();
    saved = read_json(path);
    if (!(out.exited && out.exit_code == 0) || !saved) {
      const std::string why = fmt::format("the roofline probe {}", describe_outcome(out));
      if (!o.quiet && !g_interrupted)
        fmt::print(stderr, "[roofline] {}; each rung measures its own\n", why);
      return {{"status", "failed"}, {"reason", why}};
    }
  }
  file = path.string();
  json section = *saved;
  section["status"] = "ok";
  section["file"] = "roofline.json";
  if (!o.quiet) {
    fmt::print(stderr, "[roofline] {}: {} TFLOP/s\n", saved->value("device", "?"), roofline_figures(*saved));
  }
  return section;
}

// Before a long run, one line: how long its jobs should take, from each
// step's FLOPs (bench/mfu.h) at the measured roofline of the precision its
// matmuls will run in, times kStepEfficiency. The range spans warm-up until
// stable (warmup to warmup_max steps), plus the op-count step.
void print_estimate(const std::vector<Job>& jobs, const json& roofline, const RunnerOptions& o) {
  // CPU rungs ran at 51-67 % of the roofline on an AVX-512 EPYC and near
  // 100 % on an AVX2 one (whose n-1024 probe runs below the model's larger
  // GEMMs), the attention and elementwise work included: 0.6 overestimates
  // rather than promises.
  constexpr double kStepEfficiency = 0.6;
  if (roofline.value("status", "") != "ok") return;
  const auto rate = [&](const char* p) {
    const json& e = roofline["precisions"].value(p, json::object());
    return e.value("matmul_tflops", 0.0) * 1e12;
  };
  double low_s = 0, high_s = 0;
  int counted = 0;
  for (const auto& job : jobs) {
    const RunConfig& c = job.cell->cfg;
    if (job.cell->role == "peer" || (o.resume && report_complete(o, *job.cell, job.repeat))) continue;
    RunConfig as_run = c;  // what measure will decide
    resolve_cpu_bf16(as_run, roofline, torch::Device(c.device));
    const bool bf16 = as_run.bf16_applied();
    const double flops_per_s = rate(bf16 ? "bf16" : "fp32") * kStepEfficiency;
    if (!(flops_per_s > 0)) return;
    const double step_flops = double(flops_per_token(c.model, gpt2_params_without_wpe(c.model, c.model_vocab()), c.seq)) *
                              double(c.tokens_per_step()) * c.world_size;
    const double step_s = step_flops / flops_per_s;
    low_s += step_s * double(c.warmup + c.steps + 1);
    high_s += step_s * double(std::max(c.warmup, c.warmup_until_stable() ? c.warmup_max : c.warmup) + c.steps + 1);
    ++counted;
  }
  if (high_s < 120) return;
  fmt::print(stderr,
             "ladder: estimate {:.0f}-{:.0f} min for {} job(s) (each step's FLOPs at {:.0f} % of the measured roofline; "
             "warm-up until stable decides where in the range); Ctrl-C keeps what is done\n",
             low_s / 60, high_s / 60, counted, 100 * kStepEfficiency);
}

}  // namespace

int run_matrix(const std::vector<Cell>& cells, const RunnerOptions& o) {
  InterruptHandler interrupt_handler;
  g_interrupted = false;
  const std::string started_at = utc_now_iso8601();
  std::map<std::string, const Cell*> by_id;
  for (const auto& c : cells) by_id[c.id] = &c;
  // Every cell once, then the measured cells again for each further repeat:
  // drift over the run hits every rung alike.
  std::vector<Job> jobs;
  for (int k = 1; k <= o.repeats; ++k)
    for (const auto& cell : cells)
      if (cell.runnable && (k == 1 || cell.role != "parity")) jobs.push_back({&cell, k});

  std::vector<std::string> missing;
  std::string stopped_because;  // a write or launch failure in this process
  json roofline = {{"status", "not_run"}};
  std::string roofline_file;
  try {
    if (!o.resume) write_matrix_json(cells, o);
    roofline = run_roofline(cells, o, roofline_file);
  } catch (const std::exception& e) {
    stopped_because = e.what();
  }
  if (!o.quiet && stopped_because.empty()) print_estimate(jobs, roofline, o);
  for (size_t index = 0; index < jobs.size(); ++index) {
    const Job& job = jobs[index];
    const std::string here = job_name(*job.cell, job.repeat);
    if (g_interrupted || !stopped_because.empty()) {
      if (!report_complete(o, *job.cell, job.repeat)) missing.push_back(here);
      continue;
    }
    if (o.resume && report_complete(o, *job.cell, job.repeat)) {
      if (!o.quiet) fmt::print(stderr, "[{}/{}] {}: complete report kept (resume)\n", index + 1, jobs.size(), here);
      continue;
    }
    try {
      const std::string progress = fmt::format("[{}/{}]", index + 1, jobs.size());
      if (job.cell->role == "peer")
        run_peer_job(job, progress, roofline_file, o, missing);
      else
        run_job(job, progress, roofline_file, o, missing);
    } catch (const std::exception& e) {
      // The disk is full, a directory cannot be made, fork fails: stop, and
      // still write what completed.
      stopped_because = fmt::format("while running {}: {}", here, e.what());
      if (!report_complete(o, *job.cell, job.repeat)) missing.push_back(here);
      if (!o.quiet) fmt::print(stderr, "ladder: run stopped {}\n", stopped_because);
    }
  }

  // Parity (from repeat 1), then the summary over the measured cells.
  json rows = json::array();
  bool all_good = stopped_because.empty();
  for (const auto& cell : cells) {
    if (cell.role != "measure" && cell.role != "peer") continue;
    if (!cell.runnable) {
      json row = row_base(cell, "not_runnable", {{"status", "not_run"}});
      row["reason"] = cell.not_runnable_reason;
      rows.push_back(row);
      continue;
    }
    std::vector<json> reports;
    for (int k = 1; k <= o.repeats; ++k) {
      auto r = read_json(cell_report(o, cell, k));
      reports.push_back(r ? *r : json{{"status", "missing"}});
    }
    if (!fs::exists(cell_report(o, cell))) {
      rows.push_back(row_base(cell, "missing", {{"status", "unavailable"}}));
      all_good = false;
      continue;
    }
    if (cell.role == "peer") {
      // Peers take no part in loss parity; a skipped peer (no Python or
      // torch here) does not fail the run, a failed one does.
      json row = summary_row(cell, reports, {{"status", "not_checked"}, {"reason", kPeerParityNote}});
      row["peer"] = reports.front().contains("peer") ? reports.front()["peer"] : json{{"name", cell.peer}};
      all_good = all_good && (row["status"] == "ok" || row["status"] == "skipped");
      rows.push_back(row);
      continue;
    }
    const json parity = check_parity(cell, by_id, o);
    if (reports.front()["status"] == "ok") {
      reports.front()["parity"] = parity;
      try {
        write_report(cell_report(o, cell).string(), reports.front());
      } catch (const std::exception& e) {
        if (stopped_because.empty()) stopped_because = fmt::format("while recording parity of {}: {}", cell.id, e.what());
      }
    }
    json row = summary_row(cell, reports, parity);
    all_good = all_good && row["status"] == "ok" && (parity["status"] == "pass" || parity["status"] == "baseline");
    rows.push_back(row);
  }
  add_speedups(rows);
  add_peer_ratios(rows, kPeerBaseRung);

  const bool interrupted = g_interrupted.load();
  json summary = {{"schema_version", kSchemaVersion},
                  {"kind", "ladder.run_summary"},
                  {"run_id", o.run_id},
                  {"mode", o.mode},
                  {"status", interrupted                ? "interrupted"
                             : !stopped_because.empty() ? "stopped"
                             : !missing.empty()         ? "partial"
                                                        : "complete"},
                  {"stopped_because", stopped_because.empty() ? json() : json(stopped_because)},
                  {"started_at", started_at},
                  {"finished_at", utc_now_iso8601()},
                  {"argv", o.argv},
                  {"parity_steps", o.parity_steps},
                  {"repeats", o.repeats},
                  {"roofline", roofline},
                  {"peers", {{"names", o.peers},
                             {"source", o.peers_source},
                             {"compared_with", kPeerBaseRung},
                             {"loss_parity", kPeerParityNote}}},
                  {"missing", missing},
                  {"rows", rows}};
  const fs::path summary_path = fs::path(o.run_dir) / "summary.json";
  try {
    write_file_atomically(summary_path.string(), summary.dump(2) + "\n");
  } catch (const std::exception& e) {
    fmt::print(stderr, "ladder: cannot write the summary: {}\n", e.what());
    if (!o.quiet) print_summary_table(summary, "(not written)");
    return interrupted ? 130 : 1;
  }
  if (!o.quiet) print_summary_table(summary, summary_path.string());
  if (!stopped_because.empty() && o.quiet) fmt::print(stderr, "ladder: the run stopped {}\n", stopped_because);
  if (interrupted || !missing.empty())  // what finishes it: the cells already complete are kept
    fmt::print(stderr, "ladder: {} cell(s) not complete; finish the run with:\n  {} run --resume {}\n",
               missing.size(), o.exe, o.run_dir);
  if (interrupted) return 130;
  return all_good ? 0 : 1;
}

}  // namespace ladder
