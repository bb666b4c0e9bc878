// bench/runner.cpp: child processes, resume, Ctrl-C, parity and the summary
// (see runner.h).
#include "bench/runner.h"

#include <signal.h>
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

#include "bench/table.h"
#include "reports/atomic_file.h"
#include "reports/report.h"

namespace ladder {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<pid_t> g_child{0};

void on_interrupt(int sig) {
  g_interrupted = true;
  const pid_t child = g_child.load();
  if (child > 0) kill(child, sig);  // async-signal-safe
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
fs::path cell_report(const RunnerOptions& o, const Cell& c) { return cell_dir(o, c) / "report.json"; }

bool report_complete(const RunnerOptions& o, const Cell& c) {
  auto r = read_json(cell_report(o, c));
  return r && r->value("status", "") == "ok";
}

struct ChildOutcome {
  bool exited = false;
  int exit_code = 0;
  int signal = 0;
  bool timed_out = false;
  double seconds = 0;
};

ChildOutcome run_child(const std::vector<std::string>& args, double timeout_s) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    execv(argv[0], argv.data());
    std::fprintf(stderr, "ladder: cannot exec %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  g_child = pid;
  ChildOutcome out;
  bool term_sent = false;
  std::chrono::steady_clock::time_point term_at;
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!term_sent && elapsed > timeout_s) {
      out.timed_out = true;
      kill(pid, SIGTERM);
      term_sent = true;
      term_at = std::chrono::steady_clock::now();
    }
    if (term_sent && std::chrono::steady_clock::now() - term_at > std::chrono::seconds(10)) kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  g_child = 0;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (WIFEXITED(status)) {
    out.exited = true;
    out.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
  }
  return out;
}

// A report for a cell whose process died without writing one.
void write_failure(const RunnerOptions& o, const Cell& c, const std::string& status,
                   const std::string& reason, const ChildOutcome& out) {
  const std::string now = utc_now_iso8601();
  json report = rung_report_header(c.cfg, o.run_id, o.argv, now);
  report.update({{"status", status},
                 {"finished_at", now},
                 {"failure", {{"reason", reason},
                              {"exit_code", out.exited ? json(out.exit_code) : json()},
                              {"signal", out.signal ? json(strsignal(out.signal)) : json()},
                              {"seconds", out.seconds}}}});
  write_report(cell_report(o, c).string(), report);
}

void write_matrix_json(const std::vector<Cell>& cells, const RunnerOptions& o) {
  json j = {{"schema_version", kSchemaVersion},
            {"kind", "ladder.matrix"},
            {"run_id", o.run_id},
            {"mode", o.mode},
            {"parity_steps", o.parity_steps},
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
  const double rtol = parity_rtol(cell.cfg.sw);
  json p = {{"class", parity_class(cell.cfg.sw)}, {"rtol", rtol},
            {"reference", cell.parity_ref}, {"subject", cell.parity_subject}};
  if (cell.parity_ref.empty()) {
    p["status"] = "baseline";
    return p;
  }
  auto subject = read_json(cell_report(o, *by_id.at(cell.parity_subject)));
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
  const bool pass = std::isfinite(loss_diff) && std::isfinite(norm_diff) && loss_diff <= rtol && norm_diff <= rtol;
  p["status"] = pass ? "pass" : "fail";
  return p;
}

// What every summary row has, whatever happened to the cell.
json row_base(const Cell& c, const std::string& status, const json& parity) {
  return {{"cell", c.id},    {"preset", c.cfg.preset}, {"batch", c.cfg.batch},  {"seq", c.cfg.seq},
          {"rung", c.cfg.rung}, {"switches", c.cfg.sw},   {"status", status},      {"parity", parity}};
}

json summary_row(const Cell& c, const json& report, const json& parity) {
  json row = row_base(c, report.value("status", "missing"), parity);
  row["report"] = fs::path(c.id) / "report.json";
  if (report.contains("failure")) row["failure"] = report["failure"];
  if (row["status"] != "ok") return row;
  const auto& s = report["summary"];
  row["dt_ms_median"] = s["dt_ms"]["median"];
  row["dt_ms_cv"] = s["dt_ms"]["cv"];
  row["tokens_per_s_median"] = s["tokens_per_s"]["median"];
  if (report["timing"].contains("data_pct_of_dt")) row["data_pct_of_dt"] = report["timing"]["data_pct_of_dt"];
  row["mfu_pct_datasheet"] = report["mfu"]["datasheet"]["mfu_pct"];
  row["mfu_pct_measured_roofline"] = report["mfu"]["measured_roofline"]["mfu_pct"];
  row["peak_bytes"] = report["memory"]["measured"]["peak_bytes"];
  row["peak_kind"] = report["memory"]["measured"]["peak_kind"];
  row["op_counts"] = report["op_counts"];
  json effective = json::object();
  for (const auto& [name, sw] : report["switches"].items())
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
      cells.push_back(cell);
    }
    opts.run_id = j->at("run_id").get<std::string>();
    opts.mode = j->at("mode").get<std::string>();
    opts.parity_steps = j->at("parity_steps").get<int64_t>();
  } catch (const json::exception& e) {
    throw ConfigError(fmt::format("--resume: '{}' is malformed: {}", path.string(), e.what()));
  }
  return cells;
}

int run_matrix(const std::vector<Cell>& cells, const RunnerOptions& o) {
  InterruptHandler interrupt_handler;
  g_interrupted = false;
  if (!o.resume) write_matrix_json(cells, o);
  const std::string started_at = utc_now_iso8601();
  std::map<std::string, const Cell*> by_id;
  for (const auto& c : cells) by_id[c.id] = &c;

  size_t index = 0;
  std::vector<std::string> missing;
  for (const auto& cell : cells) {
    ++index;
    if (g_interrupted) {
      missing.push_back(cell.id);
      continue;
    }
    if (!cell.runnable) continue;
    if (o.resume && report_complete(o, cell)) {
      if (!o.quiet) fmt::print(stderr, "[{}/{}] {}: complete report kept (resume)\n", index, cells.size(), cell.id);
      continue;
    }
    fs::create_directories(cell_dir(o, cell));
    const fs::path config_path = cell_dir(o, cell) / "config.json";
    write_file_atomically(config_path.string(), json(cell.cfg).dump(2) + "\n");
    fs::remove(cell_report(o, cell));
    if (!o.quiet)
      fmt::print(stderr, "[{}/{}] {} ({}{})\n", index, cells.size(), cell.id,
                 cell.role == "parity" ? "parity reference, " : "", cell.cfg.device);
    std::vector<std::string> args = {o.exe, "measure", "--config", config_path.string(),
                                     "--report", cell_report(o, cell).string(), "--label", cell.id,
                                     "--run-id", o.run_id};
    if (o.quiet) args.push_back("--quiet");
    const ChildOutcome out = run_child(args, o.rung_timeout_s);
    if (g_interrupted) {
      // A child stopped by Ctrl-C leaves no report: the cell is missing.
      if (!report_complete(o, cell)) {
        fs::remove(cell_report(o, cell));
        missing.push_back(cell.id);
      }
      continue;
    }
    auto report = read_json(cell_report(o, cell));
    const bool ok = out.exited && out.exit_code == 0 && report && report->value("status", "") == "ok";
    if (ok) continue;
    if (report && report->value("status", "ok") != "ok") {
      if (!o.quiet) fmt::print(stderr, "[{}] {}: {}\n", cell.id, (*report)["status"].get<std::string>(),
                               (*report)["failure"].value("message", ""));
      continue;  // the child recorded its own failure (an OOM, an exception)
    }
    const std::string status = out.timed_out ? "timeout" : "crashed";
    const std::string reason =
        out.timed_out ? fmt::format("no result within --rung-timeout {} s", o.rung_timeout_s)
        : out.signal  ? fmt::format("killed by signal {} ({})", out.signal, strsignal(out.signal))
                      : fmt::format("exited with code {} without a report", out.exit_code);
    write_failure(o, cell, status, reason, out);
    if (!o.quiet) fmt::print(stderr, "[{}] {}: {}; the matrix carries on\n", cell.id, status, reason);
  }

  // Parity, then the summary over the measured cells.
  json rows = json::array();
  bool all_good = true;
  for (const auto& cell : cells) {
    if (cell.role != "measure") continue;
    auto report = read_json(cell_report(o, cell));
    if (!cell.runnable) {
      json row = row_base(cell, "not_runnable", {{"status", "not_run"}});
      row["reason"] = cell.not_runnable_reason;
      rows.push_back(row);
      continue;
    }
    if (!report) {
      rows.push_back(row_base(cell, "missing", {{"status", "unavailable"}}));
      all_good = false;
      continue;
    }
    const json parity = check_parity(cell, by_id, o);
    if ((*report)["status"] == "ok") {
      (*report)["parity"] = parity;
      write_report(cell_report(o, cell).string(), *report);
    }
    all_good = all_good && (*report)["status"] == "ok" &&
               (parity["status"] == "pass" || parity["status"] == "baseline");
    rows.push_back(summary_row(cell, *report, parity));
  }
  add_speedups(rows);

  const bool interrupted = g_interrupted.load();
  json summary = {{"schema_version", kSchemaVersion},
                  {"kind", "ladder.run_summary"},
                  {"run_id", o.run_id},
                  {"mode", o.mode},
                  {"status", interrupted ? "interrupted" : !missing.empty() ? "partial" : "complete"},
                  {"started_at", started_at},
                  {"finished_at", utc_now_iso8601()},
                  {"argv", o.argv},
                  {"parity_steps", o.parity_steps},
                  {"missing", missing},
                  {"rows", rows}};
  const fs::path summary_path = fs::path(o.run_dir) / "summary.json";
  write_file_atomically(summary_path.string(), summary.dump(2) + "\n");
  if (!o.quiet) print_summary_table(summary, summary_path.string());
  if (interrupted) return 130;
  return all_good ? 0 : 1;
}

}  // namespace ladder
