// bench/run/runner.cpp: the orchestration of a run (see runner.h): the roofline
// probe, the plan's jobs, more rounds with --repeat auto, then parity and the
// summary. One job's child lives in job.h, the rounds in rounds.h, child
// processes and Ctrl-C in child_process.h, the run directory and --resume in
// run_dir.h, the parity verdict in parity.h and the summary's rows in
// summary_rows.h.
#include "bench/run/runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/run/child_process.h"
#include "bench/run/job.h"
#include "bench/measure/roofline/mfu.h"
#include "bench/run/parity.h"
#include "bench/run/peers.h"
#include "bench/measure/roofline/roofline.h"
#include "bench/run/rounds.h"
#include "bench/run/run_dir.h"
#include "bench/run/summary_rows.h"
#include "profiler/common/atomic_file.h"
#include "reports/model/report/report.h"
#include "reports/model/report/report_loader.h"
#include "reports/model/run/ratios.h"
#include "reports/model/run/summary_doc.h"
#include "reports/model/run/summary_json.h"
#include "reports/render/documents/run_document.h"
#include "variants/config/rungs.h"

namespace ladder {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The ddp rung's link: with a ddp cell of 2 or more ranks to run, the
// all-reduce micro-benchmark (`ladder bench`'s allreduce family: 2 ranks,
// Gloo on a CPU, NCCL on GPUs, at the preset's bucket sizes) measures the bus
// bandwidth its collectives move at, into <run_dir>/interconnect/micro.json;
// the best bucket's is the link ceiling of the speed-of-light table
// (bench/measure/roofline/speed_of_light.h). Null without such a cell, or when the
// benchmark did not run (the table then leaves the link's floor out).
std::optional<InterconnectSection> measure_interconnect(const std::vector<Cell>& cells, const RunnerOptions& o) {
  const Cell* ddp = nullptr;
  for (const auto& c : cells)
    if (c.runnable && c.role == "measure" && c.cfg.sw.on(switches::ddp) && c.cfg.world_size > 1 && !ddp) ddp = &c;
  if (!ddp) return std::nullopt;
  const fs::path dir = fs::path(o.run_dir) / "interconnect";
  if (!o.quiet) fmt::print(stderr, "[roofline] measuring the ddp rung's all-reduce bandwidth (ladder bench allreduce)\n");
  std::vector<std::string> args = {o.exe, "bench", "--device", ddp->cfg.device, "--preset", ddp->cfg.preset,
                                   "--benchmark_filter=^allreduce/", "--benchmark_min_time=0.1", "--out", dir.string()};
  if (ddp->cfg.threads > 0) args.insert(args.end(), {"--threads", std::to_string(ddp->cfg.threads)});
  fs::create_directories(dir);
  const std::string log = (dir / "output.log").string();  // google/benchmark's console, kept out of the run's
  const ChildOutcome out = run_children(args, {EnvVars{}}, std::min(o.rung_timeout_s, 300.0), 0, {log}).front();
  const auto micro = read_json(dir / "micro.json");
  if (!(out.exited && out.exit_code == 0) || !micro) {
    if (!o.quiet && !interrupted())
      fmt::print(stderr, "[roofline] the all-reduce benchmark {} (log: {}); the ddp rung's link has no floor\n",
                 describe_outcome(out), log);
    return std::nullopt;
  }
  double best = 0;
  std::string best_name;
  for (const auto& b : micro->value("benchmarks", json::array()))
    if (b.contains("bytes_per_s") && b["bytes_per_s"].is_number() && b["bytes_per_s"].get<double>() > best)
      best = b["bytes_per_s"].get<double>(), best_name = b.value("name", "");
  if (!(best > 0)) return std::nullopt;
  // With 2 ranks nccl-tests' bus bandwidth equals the algorithm bandwidth the benchmark reports.
  return InterconnectSection{best / 1e9, 2, best_name,
                             "ladder bench's allreduce family: 2 ranks (Gloo on a CPU, NCCL on GPUs) at the preset's "
                             "DDP bucket sizes, the best bucket's bytes/s (busbw = algbw with 2 ranks)",
                             "interconnect/micro.json"};
}

// The run's roofline.json where it holds one this build reads: kept on
// --resume. A file that does not read is measured again.
std::optional<RooflineFile> saved_roofline(const fs::path& path) {
  try {
    return fs::exists(path) ? std::optional(read_roofline_file(path.string())) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The device's ceilings (matmul TFLOP/s, memory bandwidth), measured once
// before the rungs by a `ladder roofline` child into <run_dir>/roofline.json
// (kept on --resume). Sets `file` to it, or leaves it empty when the probe
// failed: each rung then probes its matmuls in its own process, and the
// summary says why.
SummaryRoofline run_roofline(const std::vector<Cell>& cells, const RunnerOptions& o, std::string& file) {
  file.clear();
  const Cell* first = nullptr;
  for (const auto& c : cells)
    if (c.runnable && c.role == "measure" && !first) first = &c;
  if (!first) return {"not_run", "no runnable rung", {}, {}};
  const fs::path path = fs::path(o.run_dir) / "roofline.json";
  std::optional<RooflineFile> saved = saved_roofline(path);
  if (!saved) {
    if (!o.quiet)
      fmt::print(stderr, "[roofline] measuring {}'s matmul ceiling (fp32, tf32, bf16) and memory bandwidth, once for "
                 "the run\n", first->cfg.device);
    std::vector<std::string> args = {o.exe, "roofline", "--device", first->cfg.device, "--out", path.string(), "--quiet"};
    if (first->cfg.threads > 0) {
      // CPU ddp ranks split the threads; together they use the host's.
      args.push_back("--threads");
      args.push_back(std::to_string(first->cfg.threads));
    }
    const ChildOutcome out = run_children(args, {EnvVars{}}, std::min(o.rung_timeout_s, 600.0), 0).front();
    std::string unread;
    try {
      saved = read_roofline_file(path.string());
    } catch (const std::exception& e) {
      unread = e.what();
    }
    if (!(out.exited && out.exit_code == 0) || !saved) {
      const bool exited_ok = out.exited && out.exit_code == 0;
      const std::string why = exited_ok ? fmt::format("the roofline probe wrote no readable file: {}", unread)
                                        : fmt::format("the roofline probe {}", describe_outcome(out));
      if (!o.quiet && !interrupted())
        fmt::print(stderr, "[roofline] {}; each rung measures its own\n", why);
      return {"failed", why, {}, {}};
    }
  }
  if (!saved->interconnect) {
    if (auto link = measure_interconnect(cells, o)) {
      saved->interconnect = std::move(link);
      write_file_atomically(path.string(), fields::to_json(*saved).dump(2) + "\n");
    }
  }
  file = path.string();
  if (!o.quiet) {
    const std::string memory = roofline_memory_figures(*saved);
    fmt::print(stderr, "[roofline] {}: {} TFLOP/s{}\n", saved->device, roofline_figures(*saved),
               memory.empty() ? "" : "; " + memory);
  }
  SummaryRoofline section{"ok", {}, "roofline.json", {}};
  section.measured = std::move(*saved);
  return section;
}

// Before a long run, one line: how long its jobs should take, from each
// step's FLOPs (bench/measure/roofline/mfu.h) at the measured roofline of the precision its
// matmuls will run in, times kStepEfficiency. The range spans warm-up until
// stable (warmup to warmup_max steps), plus the op-count step.
void print_estimate(const std::vector<Job>& jobs, const SummaryRoofline& roofline, const RunnerOptions& o) {
  // CPU rungs ran at 51-67 % of the roofline on an AVX-512 EPYC and near
  // 100 % on an AVX2 one (whose n-1024 probe runs below the model's larger
  // GEMMs), the attention and elementwise work included: 0.6 overestimates
  // rather than promises.
  constexpr double kStepEfficiency = 0.6;
  if (!roofline.ok()) return;
  const std::optional<RooflineFile>& measured = roofline.measured;
  const auto rate = [&](const char* p) {
    const PrecisionRoofline* e = measured->precision(p);
    return e ? e->best.tflops * 1e12 : 0.0;
  };
  double low_s = 0, high_s = 0;
  int counted = 0;
  for (const auto& job : jobs) {
    const RunConfig& c = job.cell->cfg;
    if (job.cell->role == "peer" || (o.resume && report_complete(o, job))) continue;
    RunConfig as_run = c;  // what measure will decide
    resolve_cpu_bf16(as_run, measured, torch::Device(c.device));
    const bool bf16 = as_run.bf16_applied();
    const double flops_per_s = rate(precision_name(bf16 ? Precision::kBF16 : Precision::kFP32)) * kStepEfficiency;
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

// How the jobs went: what is missing, why the run stopped early (a write or
// launch failure in this process), the roofline, and when the run began.
struct RunState {
  std::vector<std::string> missing;
  std::string stopped_because;
  SummaryRoofline roofline;  // not_run
  std::string roofline_file;
  std::chrono::steady_clock::time_point began = std::chrono::steady_clock::now();
  json repeat_auto;  // what --repeat auto did (null without it)
  double elapsed_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  }
};

void run_jobs(const std::vector<Job>& jobs, const RunnerOptions& o, RunState& st) {
  for (size_t index = 0; index < jobs.size(); ++index) {
    const Job& job = jobs[index];
    const std::string here = job_name(job);
    if (interrupted() || !st.stopped_because.empty()) {
      if (!report_complete(o, job)) st.missing.push_back(here);
      continue;
    }
    const std::string progress = fmt::format("[{}/{}]", index + 1, jobs.size());
    if (o.resume && report_complete(o, job)) {
      if (!o.quiet) fmt::print(stderr, "{} {}: complete report kept (resume)\n", progress, here);
      continue;
    }
    try {
      if (job.cell->role == "peer")
        run_peer_job(job, progress, st.roofline_file, o, st.missing);
      else
        run_measure_job(job, progress, st.roofline_file, o, st.missing);
    } catch (const std::exception& e) {
      // The disk is full, a directory cannot be made, fork fails: stop, and
      // still write what completed.
      st.stopped_because = fmt::format("while running {}: {}", here, e.what());
      if (!report_complete(o, job)) st.missing.push_back(here);
      if (!o.quiet) fmt::print(stderr, "ladder: run stopped {}\n", st.stopped_because);
    }
  }
}

// The rounds of a cell on one side, from the plan, in order.
std::vector<int> rounds_of(const std::vector<Job>& plan, const Cell& cell, const std::string& side) {
  std::vector<int> rounds;
  for (const auto& j : plan)
    if (j.cell == &cell && j.side == side) rounds.push_back(j.round);
  std::sort(rounds.begin(), rounds.end());
  return rounds;
}

// One measured cell's or peer's row on one side: parity checked (from round
// 1, recorded in its report, with `check_parity`) and whether it counts
// against the run's exit code.
json cell_row(const Cell& cell, const std::string& side, const std::vector<int>& rounds,
              const std::map<std::string, const Cell*>& by_id, const RunnerOptions& o, RunState& st, bool check,
              bool& good) {
  RowContext ctx{json(), side, {}, std::nullopt};
  if (!cell.runnable) {
    ctx.parity = {{"status", "not_run"}};
    return row_without_reports(cell, "not_runnable", ctx, cell.not_runnable_reason);
  }
  if (rounds.empty() || !fs::exists(cell_report(o, cell, rounds.front(), side))) {
    good = false;
    ctx.parity = {{"status", "unavailable"}};
    return row_without_reports(cell, "missing", ctx);
  }
  // The processes that ran; a round whose process never ran (the run was
  // interrupted or stopped first) is listed, not counted as a failure.
  std::vector<RungReport> reports;
  std::vector<int> ran;
  for (int k : rounds) {
    auto r = read_run_report(cell_report(o, cell, k, side));
    (r ? ran : ctx.not_run).push_back(k);
    if (r) reports.push_back(std::move(*r));
  }
  if (cell.role == "peer") {
    // Peers take no part in loss parity; a skipped peer (no Python or torch
    // here) does not fail the run, a failed one does.
    ctx.parity = {{"status", "not_checked"}, {"reason", kPeerParityNote}};
    ctx.peer = reports.empty() || !reports.front().peer ? peer_section(cell.peer) : *reports.front().peer;
    json row = summary_row(cell, reports, ran, ctx);
    good = good && (row["status"] == "ok" || row["status"] == "skipped");
    return row;
  }
  std::optional<Parity> checked;
  if (check) checked = check_parity(cell, by_id, o, side);
  const json parity = checked ? fields::to_json(*checked) : json{{"status", "not_checked"}};
  if (checked && reports.front().status == "ok") {
    reports.front().parity = *checked;
    try {
      write_report(cell_report(o, cell, rounds.front(), side).string(), fields::to_json(reports.front()));
    } catch (const std::exception& e) {
      if (st.stopped_because.empty()) st.stopped_because = fmt::format("while recording parity of {}: {}", cell.id, e.what());
    }
  }
  ctx.parity = parity;
  json row = summary_row(cell, reports, ran, ctx);
  // Parity not checked because its reference was not to run (check_parity) is said, not failed.
  good = good && row["status"] == "ok" &&
         (!check || parity["status"] == "pass" || parity["status"] == "baseline" || parity["status"] == "not_checked");
  return row;
}

// Every measured cell's and peer's row, on every side, with the ratios
// between them (speedups with intervals, peers, ablation effects, B over A).
// `check`: parity checked and recorded (the final rows); off while --repeat
// auto decides its next round.
json all_rows(const std::vector<Cell>& cells, const std::vector<Job>& plan, const RunnerOptions& o, RunState& st,
              bool check, bool& all_good) {
  std::map<std::string, const Cell*> by_id;
  for (const auto& c : cells) by_id[c.id] = &c;
  json rows = json::array();
  const std::vector<std::string> sides = o.sides.empty() ? std::vector<std::string>{""} : o.sides;
  for (const auto& side : sides)
    for (const auto& cell : cells)
      if (cell.role == "measure" || cell.role == "peer")
        rows.push_back(cell_row(cell, side, rounds_of(plan, cell, side), by_id, o, st, check, all_good));
  add_ratios(rows);
  return rows;
}

// --repeat auto: after the first rounds, one more round at a time for the
// cells whose ratios are still wider than the target (and the cells they
// are against), while the time budget allows; then what stayed unresolved.
void add_rounds(const std::vector<Cell>& cells, const RunnerOptions& o, std::vector<Job>& plan, RunState& st) {
  const double budget_s = o.time_budget_s > 0 ? o.time_budget_s : 2 * st.elapsed_s();
  int round = 0;
  for (const auto& j : plan) round = std::max(round, j.round);
  std::vector<WideRatio> wide;
  std::string stopped = "every ratio is within the target";
  bool projected = false;
  while (!interrupted() && st.stopped_because.empty()) {
    bool ignored = true;
    const std::vector<SummaryRow> rows = read_summary_rows(all_rows(cells, plan, o, st, /*check=*/false, ignored));
    if (!projected && !o.quiet) {  // what the budget can resolve, from the first rounds' noise
      projected = true;
      const int rounds_fit = round + int((budget_s - st.elapsed_s()) / (st.elapsed_s() / double(round)));
      if (const auto r = resolvable_change(rows, o, std::max(rounds_fit, round)))
        fmt::print(stderr, "[auto] {}\n",
                   resolution_line(*r, fmt::format("{:.1f} min (about {} rounds)", budget_s / 60, r->rounds)));
    }
    wide = wide_ratios(rows, o);
    if (wide.empty()) break;
    const std::vector<Job> next = next_round(cells, wide, round + 1, o);
    const double per_job_s = st.elapsed_s() / double(std::max<size_t>(plan.size(), 1));
    if (st.elapsed_s() + per_job_s * double(next.size()) > budget_s || round >= kMaxAutoRounds) {
      stopped = round >= kMaxAutoRounds ? fmt::format("the round limit ({}) was reached", kMaxAutoRounds)
                                        : fmt::format("the time budget ({:.1f} min) would be exceeded", budget_s / 60);
      break;
    }
    ++round;
    if (!o.quiet) fmt::print(stderr, "{}\n", round_line(round, wide, st.elapsed_s(), budget_s, o));
    plan.insert(plan.end(), next.begin(), next.end());
    write_plan(o, plan);
    run_jobs(next, o, st);
  }
  st.repeat_auto = auto_summary(wide, round, stopped, budget_s, st.elapsed_s(), o);
  if (!o.quiet) fmt::print(stderr, "{}\n", auto_line(st.repeat_auto));
}

// What the run's rounds resolve, at the noise they measured (bench/run/rounds.h):
// the summary's resolution section, with its line; null without a judged
// ratio that has an interval.
std::optional<ResolutionDoc> run_resolution(const json& rows, const std::vector<Job>& plan, const RunnerOptions& o) {
  int rounds = 0;
  for (const auto& j : plan) rounds = std::max(rounds, j.round);
  const auto r = resolvable_change(read_summary_rows(rows), o, rounds);
  if (!r) return std::nullopt;
  return resolution_doc(*r, resolution_line(*r, fmt::format("this run ({} rounds)", rounds)));
}

json run_summary(const RunnerOptions& o, const RunState& st, const std::string& started_at,
                 const std::vector<Job>& plan, json rows) {
  RunSummaryDoc s;
  s.schema_version = kSchemaVersion;
  s.kind = "ladder.run_summary";
  s.run_id = o.run_id;
  s.mode = o.mode;
  s.status = interrupted()                 ? "interrupted"
             : !st.stopped_because.empty() ? "stopped"
             : !st.missing.empty()         ? "partial"
                                           : "complete";
  s.stopped_because = st.stopped_because.empty() ? std::nullopt : std::optional<std::string>(st.stopped_because);
  s.started_at = started_at;
  s.finished_at = utc_now_iso8601();
  s.argv = o.argv;
  s.parity_steps = o.parity_steps;
  s.repeats = o.repeats;
  s.repeat_auto = st.repeat_auto.is_null() ? std::nullopt : std::optional<json>(st.repeat_auto);
  s.ab = o.sides.empty() ? std::nullopt
                         : std::optional<json>(json{{"spec", o.ab_spec}, {"sides", o.sides},
                                                    {"side_a", o.side_a_exe.empty() ? "this build" : o.side_a_exe},
                                                    {"side_b_env", o.side_b_env}});
  s.roofline = st.roofline;
  s.peers = PeersDoc{o.peers, o.peers_source, std::string(peer_base_rung().name), std::string(kPeerParityNote)};
  s.missing = st.missing;
  if (o.repeat_auto || !o.sides.empty()) s.resolution = run_resolution(rows, plan, o);
  s.rows = rows.get<std::vector<json>>();
  return fields::to_json(s);
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
  RunState st;
  // The plan: saved by a run being resumed, else the first rounds.
  std::vector<Job> plan = o.resume ? read_plan(o, cells) : std::vector<Job>{};
  if (plan.empty()) plan = first_rounds(cells, o);
  try {
    if (!o.resume) write_matrix_json(cells, o);
    write_plan(o, plan);
    st.roofline = run_roofline(cells, o, st.roofline_file);
  } catch (const std::exception& e) {
    st.stopped_because = e.what();
  }
  if (!o.quiet && st.stopped_because.empty()) print_estimate(plan, st.roofline, o);
  run_jobs(plan, o, st);
  if (o.repeat_auto && st.missing.empty() && st.stopped_because.empty()) add_rounds(cells, o, plan, st);
  bool all_good = st.stopped_because.empty();
  json rows = all_rows(cells, plan, o, st, /*check=*/true, all_good);
  return finish(run_summary(o, st, started_at, plan, std::move(rows)), o, st, all_good);
}

}  // namespace ladder
