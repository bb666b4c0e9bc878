// bench/runner.cpp: the orchestration of a run (see runner.h): the roofline
// probe, each cell's and peer's child, the reports of those that died, then
// parity and the summary. Child processes and Ctrl-C live in
// child_process.h, the run directory and --resume in run_dir.h, the parity
// verdict in parity.h and the summary's rows in summary_rows.h.
#include "bench/runner.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/child_process.h"
#include "bench/mfu.h"
#include "bench/parity.h"
#include "bench/peers.h"
#include "bench/roofline.h"
#include "bench/run_dir.h"
#include "bench/summary_rows.h"
#include "profiler/common/atomic_file.h"
#include "reports/report.h"
#include "reports/report_loader.h"
#include "reports/table.h"

namespace ladder {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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

// A ddp cell is one process per rank, launched as torchrun would; other
// cells, one process with the runner's environment.
std::vector<EnvVars> rank_environments(const Cell& cell) {
  const int world = cell.cfg.world_size;
  std::vector<EnvVars> envs(static_cast<size_t>(world));
  if (!cell.cfg.sw.on("ddp")) return envs;
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
  return envs;
}

// After a measured job's children ended: the first rank to fail is the one
// to name (rank 0 writes the report). A report the child wrote itself (an
// OOM, an exception) gains how each rank ended; a child that died without one
// gets one from the runner.
void record_outcome(const Job& job, const std::vector<ChildOutcome>& outs, const fs::path& report_path,
                    const std::string& label, const RunnerOptions& o) {
  const int world = job.cell->cfg.world_size;
  size_t first_bad = 0;
  bool any_bad = false;
  for (size_t r = 0; r < outs.size(); ++r) {
    const bool bad = !(outs[r].exited && outs[r].exit_code == 0);
    if (bad && (!any_bad || outs[r].seconds < outs[first_bad].seconds)) first_bad = r;
    any_bad = any_bad || bad;
  }
  const ChildOutcome& out = any_bad ? outs[first_bad] : outs[0];
  json rank_failure = json::object();  // with several ranks: which failed first, how each ended
  if (world > 1) {
    json ranks = json::array();
    for (size_t r = 0; r < outs.size(); ++r)
      ranks.push_back({{"rank", r}, {"outcome", describe_outcome(outs[r])}, {"seconds", outs[r].seconds}});
    rank_failure = {{"first_failed_rank", first_bad}, {"ranks", ranks}};
  }
  auto report = read_json(report_path);
  if (!any_bad && report && report->value("status", "") == "ok") return;
  if (report && report->value("status", "ok") != "ok") {
    if (world > 1) {
      (*report)["failure"].update(rank_failure);
      write_report(report_path.string(), *report);
    }
    if (!o.quiet) fmt::print(stderr, "[{}] {}: {}{}\n", label, (*report)["status"].get<std::string>(),
                             world > 1 ? fmt::format("first failure: rank {} {}; ", first_bad, describe_outcome(out)) : "",
                             (*report)["failure"].value("message", ""));
    return;
  }
  const std::string who = world > 1 ? fmt::format("rank {} of {}: ", first_bad, world) : "";
  const std::string status = out.timed_out ? "timeout" : "crashed";
  const std::string reason =
      who + (out.timed_out ? fmt::format("no result within --rung-timeout {} s", o.rung_timeout_s)
             : out.signal  ? fmt::format("killed by signal {} ({})", out.signal, strsignal(out.signal))
             : report      ? fmt::format("exited with code {}", out.exit_code)
                           : fmt::format("exited with code {} without a report", out.exit_code));
  write_failure(o, *job.cell, job.repeat, status, reason, out, rank_failure);
  if (!o.quiet) fmt::print(stderr, "[{}] {}: {}; the matrix carries on\n", label, status, reason);
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
  // After a rank fails the others must notice within their timeout (plus
  // the few seconds of the census that names the missing rank).
  const double grace_s = cell.cfg.ddp.timeout_s + 10;
  const std::vector<ChildOutcome> outs = run_children(args, rank_environments(cell), o.rung_timeout_s, grace_s);
  if (interrupted()) {
    // A child stopped by Ctrl-C leaves no report: the cell is missing.
    if (!report_complete(o, cell, job.repeat)) {
      fs::remove(report_path);
      missing.push_back(job_name(cell, job.repeat));
    }
    return;
  }
  record_outcome(job, outs, report_path, label, o);
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
  if (cmd.skip_reason.empty() && cell.cfg.sw.on("bf16") && cell.cfg.device == "cpu") {
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
  if (interrupted()) {
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
      if (!o.quiet && !interrupted())
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

namespace {

// Every cell once, then the measured cells again for each further repeat:
// drift over the run hits every rung alike.
std::vector<Job> schedule(const std::vector<Cell>& cells, const RunnerOptions& o) {
  std::vector<Job> jobs;
  for (int k = 1; k <= o.repeats; ++k)
    for (const auto& cell : cells)
      if (cell.runnable && (k == 1 || cell.role != "parity")) jobs.push_back({&cell, k});
  return jobs;
}

// How the jobs went: what is missing, and why the run stopped early (a write
// or launch failure in this process), if it did.
struct RunState {
  std::vector<std::string> missing;
  std::string stopped_because;
  json roofline = {{"status", "not_run"}};
  std::string roofline_file;
};

void run_jobs(const std::vector<Job>& jobs, const RunnerOptions& o, RunState& st) {
  for (size_t index = 0; index < jobs.size(); ++index) {
    const Job& job = jobs[index];
    const std::string here = job_name(*job.cell, job.repeat);
    if (interrupted() || !st.stopped_because.empty()) {
      if (!report_complete(o, *job.cell, job.repeat)) st.missing.push_back(here);
      continue;
    }
    const std::string progress = fmt::format("[{}/{}]", index + 1, jobs.size());
    if (o.resume && report_complete(o, *job.cell, job.repeat)) {
      if (!o.quiet) fmt::print(stderr, "{} {}: complete report kept (resume)\n", progress, here);
      continue;
    }
    try {
      if (job.cell->role == "peer")
        run_peer_job(job, progress, st.roofline_file, o, st.missing);
      else
        run_job(job, progress, st.roofline_file, o, st.missing);
    } catch (const std::exception& e) {
      // The disk is full, a directory cannot be made, fork fails: stop, and
      // still write what completed.
      st.stopped_because = fmt::format("while running {}: {}", here, e.what());
      if (!report_complete(o, *job.cell, job.repeat)) st.missing.push_back(here);
      if (!o.quiet) fmt::print(stderr, "ladder: run stopped {}\n", st.stopped_because);
    }
  }
}

// One measured cell's or peer's row: parity checked (from repeat 1, recorded
// in its report) and whether it counts against the run's exit code.
json cell_row(const Cell& cell, const std::map<std::string, const Cell*>& by_id, const RunnerOptions& o,
              RunState& st, bool& good) {
  if (!cell.runnable) {
    json row = row_base(cell, "not_runnable", {{"status", "not_run"}});
    row["reason"] = cell.not_runnable_reason;
    return row;
  }
  std::vector<json> reports;
  for (int k = 1; k <= o.repeats; ++k) {
    auto r = read_json(cell_report(o, cell, k));
    reports.push_back(r ? *r : json{{"status", "missing"}});
  }
  if (!fs::exists(cell_report(o, cell))) {
    good = false;
    return row_base(cell, "missing", {{"status", "unavailable"}});
  }
  if (cell.role == "peer") {
    // Peers take no part in loss parity; a skipped peer (no Python or torch
    // here) does not fail the run, a failed one does.
    json row = summary_row(cell, reports, {{"status", "not_checked"}, {"reason", kPeerParityNote}});
    row["peer"] = reports.front().contains("peer") ? reports.front()["peer"] : json{{"name", cell.peer}};
    good = good && (row["status"] == "ok" || row["status"] == "skipped");
    return row;
  }
  const json parity = check_parity(cell, by_id, o);
  if (reports.front()["status"] == "ok") {
    reports.front()["parity"] = parity;
    try {
      write_report(cell_report(o, cell).string(), reports.front());
    } catch (const std::exception& e) {
      if (st.stopped_because.empty()) st.stopped_because = fmt::format("while recording parity of {}: {}", cell.id, e.what());
    }
  }
  json row = summary_row(cell, reports, parity);
  good = good && row["status"] == "ok" && (parity["status"] == "pass" || parity["status"] == "baseline");
  return row;
}

json run_summary(const RunnerOptions& o, const RunState& st, const std::string& started_at, json rows) {
  return {{"schema_version", kSchemaVersion},
          {"kind", "ladder.run_summary"},
          {"run_id", o.run_id},
          {"mode", o.mode},
          {"status", interrupted()                 ? "interrupted"
                     : !st.stopped_because.empty() ? "stopped"
                     : !st.missing.empty()         ? "partial"
                                                   : "complete"},
          {"stopped_because", st.stopped_because.empty() ? json() : json(st.stopped_because)},
          {"started_at", started_at},
          {"finished_at", utc_now_iso8601()},
          {"argv", o.argv},
          {"parity_steps", o.parity_steps},
          {"repeats", o.repeats},
          {"roofline", st.roofline},
          {"peers", {{"names", o.peers}, {"source", o.peers_source}, {"compared_with", kPeerBaseRung},
                     {"loss_parity", kPeerParityNote}}},
          {"missing", st.missing},
          {"rows", std::move(rows)}};
}

// Writes summary.json and prints the table; the exit code.
int finish(const json& summary, const RunnerOptions& o, const RunState& st, bool all_good) {
  const bool was_interrupted = interrupted();
  const fs::path summary_path = fs::path(o.run_dir) / "summary.json";
  try {
    write_file_atomically(summary_path.string(), summary.dump(2) + "\n");
  } catch (const std::exception& e) {
    fmt::print(stderr, "ladder: cannot write the summary: {}\n", e.what());
    if (!o.quiet) print_summary_table(summary, "(not written)", o.format);
    return was_interrupted ? 130 : 1;
  }
  if (!o.quiet) print_summary_table(summary, summary_path.string(), o.format);
  if (!st.stopped_because.empty() && o.quiet) fmt::print(stderr, "ladder: the run stopped {}\n", st.stopped_because);
  if (was_interrupted || !st.missing.empty())  // what finishes it: the cells already complete are kept
    fmt::print(stderr, "ladder: {} cell(s) not complete; finish the run with:\n  {} run --resume {}\n",
               st.missing.size(), o.exe, o.run_dir);
  if (was_interrupted) return 130;
  return all_good ? 0 : 1;
}

}  // namespace

int run_matrix(const std::vector<Cell>& cells, const RunnerOptions& o) {
  InterruptHandler interrupt_handler;  // clears interrupted()
  const std::string started_at = utc_now_iso8601();
  const std::vector<Job> jobs = schedule(cells, o);
  RunState st;
  try {
    if (!o.resume) write_matrix_json(cells, o);
    st.roofline = run_roofline(cells, o, st.roofline_file);
  } catch (const std::exception& e) {
    st.stopped_because = e.what();
  }
  if (!o.quiet && st.stopped_because.empty()) print_estimate(jobs, st.roofline, o);
  run_jobs(jobs, o, st);
  // Parity (from repeat 1), then the summary over the measured cells.
  std::map<std::string, const Cell*> by_id;
  for (const auto& c : cells) by_id[c.id] = &c;
  json rows = json::array();
  bool all_good = st.stopped_because.empty();
  for (const auto& cell : cells)
    if (cell.role == "measure" || cell.role == "peer") rows.push_back(cell_row(cell, by_id, o, st, all_good));
  add_speedups(rows);
  add_peer_ratios(rows, kPeerBaseRung);
  return finish(run_summary(o, st, started_at, std::move(rows)), o, st, all_good);
}

}  // namespace ladder
