// bench/run/job.cpp: one job of a run, in its own child process (see job.h): a
// rung's `ladder measure` (one process per rank for ddp, with the launcher's
// variables torchrun would set), or a peer's scripts/peer.py, whose report it
// completes; and the report of a child that died without writing one.
#include "bench/run/job.h"

#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/run/child_process.h"
#include "bench/run/peers.h"
#include "bench/measure/harness/harness.h"
#include "bench/measure/roofline/roofline.h"
#include "bench/measure/report/rung_report.h"
#include "profiler/common/atomic_file.h"
#include "reports/model/run/peer_cells.h"
#include "reports/model/report/report.h"
#include "reports/model/report/report_loader.h"

namespace ladder {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The job's cell as the run table names it: fp32, peer:eager, B/flash.
std::string cell_name(const Cell& c, const std::string& side) {
  return side.empty() ? peer_display_name(c.id) : side + "/" + peer_display_name(c.id);
}

}  // namespace

std::string job_label(const Job& job) {
  const Cell& c = *job.cell;
  const std::string name = cell_name(c, job.side);
  return c.role == "parity" ? name : fmt::format("{} #{}", name, job.round);
}

void check_test_slowdown(const std::vector<Cell>& cells, bool sides) {
  const TestSlowdown t = test_slowdown();
  if (t.cell.empty()) return;
  std::string names;
  for (const Cell& c : cells) {
    if (c.role == "parity") continue;
    for (const std::string& side : sides ? std::vector<std::string>{"A", "B"} : std::vector<std::string>{""}) {
      if (cell_name(c, side) == t.cell) return;
      names += (names.empty() ? "" : ", ") + cell_name(c, side);
    }
  }
  throw ConfigError(fmt::format("{}: no cell '{}' in this run; expected one of: {}", kTestSlowdownEnv, t.cell, names));
}

EnvVars test_slowdown_env(const Job& job) {
  const TestSlowdown t = test_slowdown();
  if (t.cell.empty()) return {};
  const bool hit = job.cell->role != "parity" && cell_name(*job.cell, job.side) == t.cell &&
                   (t.round == 0 || t.round == job.round);
  return {{kTestSlowdownEnv, hit ? fmt::format("{}", t.pct) : ""}};
}

namespace {

// How a job's child ended, as its failure report says it.
FailureFacts child_failure(const Job& job, const std::string& status, const std::string& reason,
                           const ChildOutcome& out) {
  FailureFacts f;
  f.status = status;
  f.reason = reason;
  f.child_ended = true;
  if (out.exited) f.exit_code = out.exit_code;
  if (out.signal) f.signal = std::string(strsignal(out.signal));
  f.seconds = out.seconds;
  f.repeat = job.round;
  return f;
}

// A report for a cell whose process died without writing one; `ranks`: a ddp
// cell's per-rank outcomes, or none.
void write_failure(const RunnerOptions& o, const Job& job, const std::string& status, const std::string& reason,
                   const ChildOutcome& out, const RankFailures& ranks) {
  FailureFacts f = child_failure(job, status, reason, out);
  f.ranks = ranks;
  write_report(job_report(o, job).string(),
               build_failure_report(job.cell->cfg, o.run_id, o.argv, utc_now_iso8601(), f));
}

// Before a job's child runs: its report directory, the cell's config.json
// (what the child reads), and no stale report (a report exists only once the
// child, or the runner for it, wrote a complete one). Returns {report, config}.
std::pair<fs::path, fs::path> prepare_job(const Job& job, const RunnerOptions& o) {
  const fs::path report_path = job_report(o, job);
  fs::create_directories(report_path.parent_path());
  const fs::path config_path = cell_dir(o, *job.cell, job.side) / "config.json";
  write_file_atomically(config_path.string(), json(job.cell->cfg).dump(2) + "\n");
  fs::remove(report_path);
  return {report_path, config_path};
}

// A ddp cell is one process per rank, launched as torchrun would; other
// cells, one process with the runner's environment.
std::vector<EnvVars> rank_environments(const Cell& cell) {
  const int world = cell.cfg.world_size;
  std::vector<EnvVars> envs(static_cast<size_t>(world));
  if (!cell.cfg.sw.on(switches::ddp)) return envs;
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
  RankFailures rank_failure;  // with several ranks: which failed first, how each ended
  if (world > 1) {
    rank_failure.first_failed_rank = int64_t(first_bad);
    for (size_t r = 0; r < outs.size(); ++r)
      rank_failure.ranks.push_back({int64_t(r), describe_outcome(outs[r]), outs[r].seconds});
  }
  auto report = read_json(report_path);
  if (!any_bad && report && report->value("status", "") == "ok") return;
  if (report && report->value("status", "ok") != "ok") {
    if (world > 1) {  // the report rank 0 wrote, as the struct, with how every rank ended
      RungReport typed = fields::from_json<RungReport>(*report, report_path.string());
      if (typed.failure) {
        typed.failure->first_failed_rank = rank_failure.first_failed_rank;
        typed.failure->ranks = rank_failure.ranks;
      }
      *report = fields::to_json(typed);
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
  write_failure(o, job, status, reason, out, rank_failure);
  if (!o.quiet) fmt::print(stderr, "[{}] {}: {}; the matrix carries on\n", label, status, reason);
}

}  // namespace

// Runs one cell's process (or its ranks), and records a report for a child
// that died without one. Appends to `missing` when Ctrl-C stopped it.
void run_measure_job(const Job& job, const std::string& progress, const std::string& roofline_file,
                     const RunnerOptions& o, std::vector<std::string>& missing) {
  const Cell& cell = *job.cell;
  const auto [report_path, config_path] = prepare_job(job, o);
  const std::string label = job_label(job);
  if (!o.quiet)
    fmt::print(stderr, "{} {} ({}{})\n", progress, label, cell.role == "parity" ? "parity reference, " : "",
               cell.cfg.device);
  // Side A of an A/B comparison may be another build of ladder.
  const std::string exe = job.side == "A" && !o.side_a_exe.empty() ? o.side_a_exe : o.exe;
  std::vector<std::string> args = {exe, "measure", "--config", config_path.string(),
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
  std::vector<EnvVars> envs = rank_environments(cell);
  if (job.side == "B")
    for (auto& env : envs) env.insert(env.end(), o.side_b_env.begin(), o.side_b_env.end());
  const EnvVars slowdown = test_slowdown_env(job);
  for (auto& env : envs) env.insert(env.end(), slowdown.begin(), slowdown.end());
  const std::vector<ChildOutcome> outs = run_children(args, envs, o.rung_timeout_s, grace_s);
  if (interrupted()) {
    // A child stopped by Ctrl-C leaves no report: the cell is missing.
    if (!report_complete(o, job)) {
      fs::remove(report_path);
      missing.push_back(job_name(job));
    }
    return;
  }
  record_outcome(job, outs, report_path, label, o);
}

namespace {

// A peer's report when its process left none, or could not start.
void write_peer_failure(const RunnerOptions& o, const Job& job, const std::string& status, const std::string& reason,
                        const ChildOutcome& out) {
  const Cell& c = *job.cell;
  write_report(job_report(o, job).string(),
               build_failure_report(c.cfg, o.run_id, o.argv, utc_now_iso8601(), child_failure(job, status, reason, out),
                                    peer_section(c.peer)));
}

// After a peer's process ended: its report. Completed from the partial
// report it wrote (complete_peer_report), its own failure report (a compile
// error, no torch) with how the process ended, or a failure report when it
// left none or a malformed one.
void record_peer_outcome(const Job& job, const ChildOutcome& out, const PeerCommand& cmd, const fs::path& partial_path,
                         const std::string& roofline_file, const RunnerOptions& o) {
  const fs::path report_path = job_report(o, job);
  auto partial = read_json(partial_path);
  const std::string status = partial ? partial->value("status", "") : "";
  if (partial && status == "ok" && out.exited && out.exit_code == 0) {
    try {
      write_report(report_path.string(), complete_peer_report(*partial, job.cell->cfg, roofline_file));
      return;
    } catch (const nlohmann::json::exception& e) {
      write_peer_failure(o, job, "failed", fmt::format("its report is malformed: {}", e.what()), out);
    } catch (const ConfigError& e) {
      write_peer_failure(o, job, "failed", fmt::format("its report is incomplete: {}", e.what()), out);
    } catch (const std::runtime_error& e) {
      write_peer_failure(o, job, "failed", fmt::format("its report is incomplete: {}", e.what()), out);
    }
  } else if (partial && !status.empty() && status != "ok") {
    // peer.py recorded its own failure (a compile error, no torch): keep it, with how the process ended.
    (*partial)["failure"]["exit_code"] = out.exited ? json(out.exit_code) : json();
    (*partial)["failure"]["seconds"] = out.seconds;
    if (job.round > 1) (*partial)["failure"]["repeat"] = job.round;
    write_report(report_path.string(), *partial);
  } else {
    const std::string st = out.timed_out ? "timeout" : out.signal ? "crashed" : "failed";
    const std::string reason =
        out.timed_out ? fmt::format("no result within --rung-timeout {} s", o.rung_timeout_s)
        : out.signal  ? fmt::format("killed by signal {} ({})", out.signal, strsignal(out.signal))
                      : fmt::format("{} {} exited with code {} without a report", cmd.args[0], cmd.args[1],
                                    out.exit_code);
    write_peer_failure(o, job, st, reason, out);
  }
}

// A peer that did not end ok, in one line: its status, the reason and the
// last line of its message (a traceback ends with the exception); then,
// unless it was skipped, the tail of its output with the log's path.
void print_peer_failure(const std::string& label, const fs::path& report_path, const fs::path& log_path) {
  constexpr size_t kTailLines = 20;
  auto r = read_json(report_path);
  const json failure = r && r->contains("failure") ? (*r)["failure"] : json::object();
  std::string message = failure.value("message", "");
  while (!message.empty() && message.back() == '\n') message.pop_back();
  message = message.substr(message.rfind('\n') == std::string::npos ? 0 : message.rfind('\n') + 1);
  const std::string status = r ? r->value("status", "?") : "?";
  fmt::print(stderr, "[{}] {}: {}{}; the matrix carries on\n", label, status, failure.value("reason", ""),
             message.empty() ? "" : ": " + message.substr(0, 300));
  if (status == "skipped") return;
  if (const std::string tail = log_tail(log_path.string(), kTailLines, "  | "); !tail.empty())
    fmt::print(stderr, "[{}] its output, the last {} lines at most of {}:\n{}", label, kTailLines,
               log_path.string(), tail);
}

}  // namespace

// Runs one peer's scripts/peer.py child and completes its partial report
// into <cell>/report.json (complete_peer_report: summary, FLOPs, MFU against
// the run's roofline). No Python or torch: "skipped"; a compile error or
// an exception: "failed" with the peer's message; the matrix carries on.
// The child's stdout and stderr go to <cell>/output.log (kPeerLogFile), its
// progress lines to the runner's stderr; the log's tail is printed only when
// the peer did not end ok.
void run_peer_job(const Job& job, const std::string& progress, const std::string& roofline_file,
                  const RunnerOptions& o, std::vector<std::string>& missing) {
  const Cell& cell = *job.cell;
  const auto [report_path, config_path] = prepare_job(job, o);
  const fs::path partial_path = report_path.parent_path() / "peer_partial.json";
  const fs::path log_path = report_path.parent_path() / kPeerLogFile;
  fs::remove(partial_path);
  fs::remove(log_path);
  const std::string label = job_label(job);
  if (!o.quiet) fmt::print(stderr, "{} {} (PyTorch peer, {})\n", progress, label, cell.cfg.device);
  PeerCommand cmd = peer_command(cell, config_path.string(), partial_path.string(), label, o.run_id, o.quiet);
  // A peer computes in the precision its rung would here: on a CPU whose
  // bf16 matmuls the run measured slower than fp32's, in fp32 (RunConfig::bf16_applied).
  if (cmd.skip_reason.empty() && cell.cfg.sw.on(switches::bf16) && cell.cfg.device == "cpu") {
    RunConfig as_run = cell.cfg;
    if (!roofline_file.empty()) resolve_cpu_bf16(as_run, read_roofline_file(roofline_file), torch::Device(torch::kCPU));
    if (const std::string why = as_run.bf16_off_reason(); !why.empty()) {
      cmd.args.push_back("--bf16-off-because");
      cmd.args.push_back(why);
    }
  }
  if (!cmd.skip_reason.empty()) {
    write_peer_failure(o, job, "skipped", cmd.skip_reason, ChildOutcome{});
    if (!o.quiet) fmt::print(stderr, "[{}] skipped: {}\n", label, cmd.skip_reason);
    return;
  }
  const ChildOutput output{log_path.string(), o.quiet ? -1 : kPeerProgressFd};
  const ChildOutcome out = run_children(cmd.args, {test_slowdown_env(job)}, o.rung_timeout_s, 0, output).front();
  if (interrupted()) {
    // Stopped by Ctrl-C: the cell is missing (--resume runs it again).
    if (!report_complete(o, job)) {
      fs::remove(report_path);
      missing.push_back(job_name(job));
    }
    fs::remove(partial_path);
    return;
  }
  record_peer_outcome(job, out, cmd, partial_path, roofline_file, o);
  fs::remove(partial_path);
  auto report = read_json(report_path);
  if (!o.quiet && !(report && report->value("status", "") == "ok")) print_peer_failure(label, report_path, log_path);
}

}  // namespace ladder
