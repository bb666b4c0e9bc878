// bench/measure/report/rung_report.cpp: see rung_report.h.
#include "bench/measure/report/rung_report.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "bench/measure/report/memory.h"
#include "bench/measure/roofline/mfu.h"
#include "bench/measure/roofline/roofline.h"
#include "bench/measure/roofline/speed_of_light.h"
#include "bench/measure/harness/step_columns.h"
#include "reports/model/report/report.h"
#include "reports/model/report/rung_report.h"
#include "reports/model/report/report_loader.h"
#include "reports/stats/stats.h"
#include "variants/config/rungs.h"
#include "variants/switches/switch.h"

namespace ladder {

using nlohmann::json;

namespace {

// The precision MFU is measured against: what the rung's matmuls really ran
// in, the loosest numerics (SwitchDecl::numerics) among the switches in effect.
Precision mfu_precision(const Switches& numerics) {
  switch (loosest_numerics(numerics)) {
    case Numerics::kBf16: return Precision::kBF16;
    case Numerics::kTf32: return Precision::kTF32;
    case Numerics::kFp32Exact: break;
  }
  return Precision::kFP32;
}

// The run's roofline (one denominator for every rung), or, when there is
// none or it is unusable here, this process's own probe, saying why.
std::pair<RooflineResult, RooflineSource> roofline_for(const MeasuredRun& m, Precision precision) {
  const RooflineInUse& run = m.roofline;
  std::string why = run.error.empty() ? "the run has no roofline.json" : run.error;
  if (run.roofline) {
    try {
      return {run_roofline_entry(*run.roofline, precision, m.device_name, run.file),
              {"once for the run, before the rungs", run.file}};
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  return {probe_matmul(m.device, precision), {fmt::format("by {} ({})", m.roofline_probe_by, why), std::nullopt}};
}

Mfu mfu_section(const MeasuredRun& m, Precision precision, double tokens_per_s, int64_t fpt,
                const RooflineResult& roof, RooflineSource roof_source) {
  Mfu mfu;
  mfu.precision = precision_name(precision);
  mfu.tokens_per_s_basis = m.tokens_basis;
  if (m.cfg.peak_tflops) {
    mfu.datasheet = {*m.cfg.peak_tflops, mfu_pct(tokens_per_s, fpt, *m.cfg.peak_tflops), m.device_name,
                     "--peak-tflops override"};
  } else if (auto peak = datasheet_peak(m.device_name, precision)) {
    mfu.datasheet = {peak->tflops, mfu_pct(tokens_per_s, fpt, peak->tflops), peak->device, peak->source};
  }
  mfu.measured_roofline = {roof.tflops, mfu_pct(tokens_per_s, fpt, roof.tflops), roof, std::move(roof_source)};
  return mfu;
}

// `graph`: the step replays a CUDA graph, whose activations live in the
// graph's private pool. Replays allocate nothing, so the allocator's
// allocated/active peaks leave them out; reserved bytes include the pool.
Memory memory_section(const MeasuredRun& m, const MemoryStats& s, const StepPlan& plan) {
  const bool cuda = m.device.is_cuda(), graph = m.graph;
  auto pct = [&](int64_t v) { return 100.0 * double(v) / double(s.device_total_bytes); };
  Memory mem;
  MemoryMeasured& x = mem.measured;
  // CPU: the counting allocator's live tensor bytes (bench/measure/device/cpu_allocator.h).
  if (s.allocated_measured(cuda) && !graph) x.peak_allocated_bytes = s.peak_allocated_bytes;
  if (cuda) x.peak_reserved_bytes = s.peak_reserved_bytes;
  if (cuda && !graph) x.peak_active_bytes = s.peak_active_bytes;
  x.allocated_active_valid = cuda && !graph;
  x.allocated_active_note =
      graph ? "null: a CUDA-graph replay allocates nothing, so allocated/active peaks (here and in steps.peak_*) "
              "leave out the activations in the graph's private pool; peak_reserved_bytes includes it"
      : cuda           ? ""
      : s.cpu_counting ? "CPU: peak_allocated_bytes counts live tensor storage (LibTorch's CPU allocator "
                         "wrapped); peak_rss_bytes is the process's resident set, freed blocks included"
                       : "CPU: tensor storage not counted; see peak_rss_bytes";
  x.alloc_retries = s.alloc_retries;
  x.ooms = s.ooms;
  x.peak_rss_bytes = s.peak_rss_bytes;
  x.peak_rss_window = s.peak_rss_reset ? "measured steps (VmHWM reset at start)" : "process lifetime";
  x.device_total_bytes = s.device_total_bytes;
  x.peak_bytes = cuda ? s.peak_reserved_bytes : s.peak_rss_bytes;
  x.peak_kind = cuda ? "cuda_peak_reserved" : "cpu_peak_rss";
  x.peak_pct_of_device = pct(x.peak_bytes);
  if (cuda && !graph) x.peak_active_pct_of_device = pct(s.peak_active_bytes);
  if (cuda) x.peak_reserved_pct_of_device = pct(s.peak_reserved_bytes);
  x.monitor = m.memory_monitor;
  mem.estimate =
      estimate_memory(m.cfg.model, m.n_params, m.cfg.batch, m.cfg.seq, memory_options(m.cfg, plan));
  mem.cpu_allocator = m.cpu_allocator;
  return mem;
}

Timing timing_section(const MeasuredRun& m, const HarnessResult& r, double dt_median) {
  const RunConfig& c = m.cfg;
  double sum_dt = 0, sum_data = 0;
  for (const auto& s : r.steps) {
    sum_dt += s.dt_ms;
    sum_data += s.data_ms;
  }
  Timing t;
  t.mode = r.timing_mode;
  t.timer = r.timer_method;
  t.warmup_steps_excluded = int64_t(r.warmup_steps.size());
  t.measured_steps = int64_t(r.steps.size());
  t.warmup = {c.warmup, c.warmup_until_stable() ? c.warmup_max : c.warmup, kWarmupWindow,
              int64_t(r.warmup_steps.size()), c.warmup_tolerance_pct, r.warmup_stopped,
              "after min steps, warm up until the last `window` steps' dt lie within tolerance_pct of their minimum, "
              "at most max steps"};
  t.measured_wall_ms = r.measured_wall_ms;
  if (r.test_slowdown_pct > 0) t.test_slowdown_pct = r.test_slowdown_pct;
  if (r.host_steal_ms >= 0) {
    t.host_steal_ms = r.host_steal_ms;
    t.host_steal_pct_of_wall =
        100.0 * r.host_steal_ms / (r.measured_wall_ms * double(std::max(1u, std::thread::hardware_concurrency())));
  }
  t.harness_overhead_ms_per_step = r.harness_overhead_ms_per_step;
  t.harness_overhead_pct_of_dt = 100.0 * r.harness_overhead_ms_per_step / dt_median;
  t.data_ms_per_step = sum_data / double(r.steps.size());
  t.data_pct_of_dt = 100.0 * sum_data / sum_dt;
  t.data_time = m.data_time;
  t.noise = r.noise;
  return t;
}

// How the ddp section's traffic figures are read.
DdpTraffic traffic_section(const DdpFacts& d) {
  DdpTraffic t;
  t.ring_model = "per_rank[].sent_bytes_ring: the payload this rank handed to each collective, counted, times what a "
                 "ring sends from it: 2(R-1)/R of an all-reduce, a broadcast's payload from every rank but the one "
                 "before its root (Gloo's broadcast is a tree: the same bytes in all, per rank at two ranks)";
  t.measured = "per_rank[].net_tx_bytes / net_rx_bytes: the host's interface counters (/proc/net/dev of the rank's "
               "network namespace, loopback and ifb mirrors excluded) across each step: everything the host sent, "
               "TCP/IP headers included; ranks on one host share them, and ranks that talk over loopback or NVLink "
               "read 0";
  t.interfaces = d.interfaces;
  if (d.zero1)
    t.gather = "per_rank[].gather_ms: ZeRO-1's parameter broadcasts, in the optimizer phase after this rank's AdamW, "
               "first launch to the last wait's return; nothing overlaps them";
  return t;
}

// Which rank the others wait for (reports/model/report/slow_rank.h), from every
// rank's phases per step: on a CPU their CPU time (where a host's ranks share
// its cores, a rank's wall time holds the others' contention for them), on
// CUDA the device's. None where a rank has none (no measured steps, or a rank
// of an older build).
std::optional<SlowRank> judge_ranks(const std::vector<RankFacts>& per_rank) {
  std::vector<RankSteps> ranks;
  bool cpu = !per_rank.empty();
  for (const RankFacts& rk : per_rank) cpu = cpu && rk.cpu_phases_ms;
  for (const RankFacts& rk : per_rank) {
    const auto& phases = cpu ? rk.cpu_phases_ms : rk.phases_ms;
    if (!phases) return std::nullopt;
    ranks.push_back(phases->as_rank_steps(rk.rank));
  }
  if (ranks.size() < 2 || ranks.front().wait_ms.size() < 2) return std::nullopt;
  SlowRank s = judge_slow_rank(ranks);
  s.basis = cpu ? "cpu_time" : "device_time";
  return s;
}

// The ddp section of rank 0's report: every rank's figures and, for the
// step metrics declared kAcrossRanks, the spread of the ranks' medians.
std::optional<DdpSection> ddp_section(const std::optional<DdpFacts>& ddp) {
  if (!ddp) return std::nullopt;
  const DdpFacts& d = *ddp;
  DdpSection out;
  out.per_rank = d.per_rank;
  const std::vector<RankFacts> facts = out.rank_facts();
  for (const StepMetric& m : step_metrics()) {
    if (m.ranks != RankScope::kAcrossRanks) continue;
    std::vector<double> medians;
    for (const RankFacts& rk : facts)
      if (const auto it = rk.median.find(m.key); it != rk.median.end()) medians.push_back(it->second);
    if (!medians.empty()) out.across_ranks_of_medians[m.key] = summarize(medians);
  }
  out.world_size = d.world_size;
  out.backend = d.backend;
  out.launcher = d.launcher;
  out.master = d.master;
  out.timeouts_s = {d.first_timeout_s, d.timeout_s, d.connect_timeout_s};
  out.data_sharding = "rank r of W reads rows ((step*micro_steps + micro)*W + r)*B .. +B of the stream";
  out.comm_timing = d.backend == "gloo"
                        ? "host clock at launch and at the work's completion callback"
                        : "device: allreduce_ms sums each bucket's NCCL work duration (its start and end CUDA "
                          "events); exposed is the compute stream's wait from backward's end to after the last "
                          "bucket (CUDA events)";
  out.traffic = traffic_section(d);
  out.slow_rank = judge_ranks(facts);
  if (d.test_slow_rank) out.test_slow_rank = *d.test_slow_rank;
  return out;
}

}  // namespace

namespace {

// `numerics`: the switches whose numerics took effect (the parity class's).
Parity pending_parity(const MeasuredRun& m, const Switches& numerics) {
  Parity p;
  if (m.parity_not_checked.empty()) {
    p.status = "pending";
    p.parity_class = parity_class(numerics);
    p.rtol = parity_rtol(numerics);
  } else {
    p.status = "not_checked";
    p.parity_class = parity_class(m.cfg.sw);
    p.rtol = parity_rtol(m.cfg.sw);
    p.reason = m.parity_not_checked;
  }
  return p;
}

// What the steps measured, per step and summarised, with MFU against the
// roofline per step in the summary.
void add_steps(RungReport& report, const HarnessResult& r, const MetricContext& metrics, double devices,
               double roof_tflops) {
  report.steps = step_columns(r.steps, metrics);
  report.warmup_steps = step_columns(r.warmup_steps, metrics);
  StepSummary summary = summarize_steps(*report.steps);
  std::vector<double> mfu_steps;
  for (const auto& s : r.steps)
    mfu_steps.push_back(mfu_pct(s.tokens_per_s / devices, metrics.flops_per_token, roof_tflops));
  summary.metrics["mfu_pct_measured_roofline"] = summarize(mfu_steps);
  report.summary = std::move(summary);
}

}  // namespace

json build_rung_report(const MeasuredRun& m, const HarnessResult& r) {
  const RunConfig& c = m.cfg;
  const int64_t fpt = flops_per_token(c.model, m.n_params_without_wpe, c.seq);
  const MetricContext metrics{c.world_size, fpt};
  const Switches numerics = numerics_in_effect(c.sw, m.switches);  // as the step ran: MFU's precision, parity's class
  const Precision precision = mfu_precision(numerics);
  const StepPlan plan = m.plan ? *m.plan : plan_for(c);  // what the step ran: the memory estimate's and the floors'
  const auto [roof, roof_source] = roofline_for(m, precision);
  RungReport report = rung_report_header(c, m.run_id, m.argv, m.started_at);
  add_steps(report, r, metrics, m.devices, roof.tflops);
  const double tok_s_aggregate = report.summary_value("tokens_per_s").value();  // the measured steps' median
  const double tok_s = tok_s_aggregate / m.devices;
  report.status = "ok";
  report.finished_at = m.finished_at.empty() ? utc_now_iso8601() : m.finished_at;
  report.environment = m.environment;
  report.world_size = c.world_size;
  report.switches = m.switches;
  report.parity = pending_parity(m, numerics);
  report.data = m.data;
  report.model = ModelFacts{m.n_params, m.n_params_without_wpe, c.model.vocab_size, c.model_vocab()};
  report.timing = timing_section(m, r, report.summary_value("dt_ms").value());
  report.flops = Flops{fpt, kFlopsFormula, double(fpt) * double(c.tokens_per_step())};
  report.throughput = Throughput{c.tokens_per_step(), c.tokens_per_micro_step(), c.micro_steps(), tok_s_aggregate,
                                 tok_s};
  report.mfu = mfu_section(m, precision, tok_s, fpt, roof, roof_source);
  report.memory = memory_section(m, r.memory, plan);
  report.op_counts = m.op_counts;
  report.ddp = ddp_section(m.ddp);
  report.op_breakdown = m.op_breakdown;
  report.gemm_plan = m.gemm_plan;
  report.attention_plan = m.attention_plan;
  report.profile = m.profile;
  if (m.suite) report.suite = m.suite;
  if (m.peer) report.peer = m.peer;
  // The step's work as it ran (its config and plan), held to the report's MFU ceiling and the run's roofline.
  // A roofline named but missing leaves the datasheet's figures; one that cannot be read, no section.
  const RooflineInUse& run = m.roofline;
  report.speed_of_light = speed_of_light_section(report, c, plan, precision == Precision::kBF16, run.roofline,
                                                 run.missing ? "" : run.error);
  return fields::to_json(report);
}

json build_failure_report(const RunConfig& c, const std::string& run_id, const std::vector<std::string>& argv,
                          const std::string& started_at, const FailureFacts& f, const std::optional<PeerSection>& peer) {
  Failure failure;
  failure.reason = f.reason;
  if (f.message) failure.message = f.message->substr(0, 2000);
  if (f.phase) failure.phase = *f.phase;
  if (f.step) failure.step = *f.step;
  if (f.rank) failure.rank = *f.rank;
  if (f.child_ended) {
    failure.exit_code = f.exit_code ? std::optional<int64_t>(*f.exit_code) : std::nullopt;
    failure.signal = f.signal;
    failure.seconds = f.seconds;
  }
  if (f.ranks.first_failed_rank) {  // bench/run/job.cpp: which rank failed first, how each ended
    failure.first_failed_rank = *f.ranks.first_failed_rank;
    failure.ranks = f.ranks.ranks;
  }
  if (f.repeat > 1) failure.repeat = f.repeat;
  RungReport report = rung_report_header(c, run_id, argv, started_at);
  report.status = f.status;
  report.finished_at = utc_now_iso8601();
  report.failure = std::move(failure);
  if (peer) report.peer = peer;
  return fields::to_json(report);
}

HarnessResult harness_result_of(const TimedSteps& t, const RunConfig& cfg) {
  HarnessResult r;
  r.timer_method = t.timer_method;
  r.timing_mode = "end_to_end";
  r.test_slowdown_pct = t.test_slowdown_pct;
  size_t warm = 0;
  std::vector<StepRecord> seen;
  while (warm < t.steps.size() && !warmup_done(seen, cfg, &r.warmup_stopped)) seen.push_back(t.steps[warm++]);
  if (t.steps.size() < warm + size_t(cfg.steps))
    throw std::runtime_error(fmt::format("{} steps were recorded; the warm-up rule took {} of them, and {} more "
                                         "are to be measured",
                                         t.steps.size(), warm, cfg.steps));
  r.warmup_steps = seen;
  r.steps.assign(t.steps.begin() + long(warm), t.steps.begin() + long(warm) + cfg.steps);
  r.next_step = r.steps.back().step + 1;
  const size_t last = warm + size_t(cfg.steps) - 1;
  const double wall0 = warm > 0 ? t.wall_ms[warm - 1] : t.wall_before_ms;
  r.measured_wall_ms = t.wall_ms[last] - wall0;
  double sum_dt = 0;
  for (const auto& s : r.steps) sum_dt += s.dt_ms;
  r.harness_overhead_ms_per_step = (r.measured_wall_ms - sum_dt) / double(r.steps.size());
  if (!t.steal_ms.empty()) r.host_steal_ms = t.steal_ms[last] - (warm > 0 ? t.steal_ms[warm - 1] : t.steal_before_ms);
  r.memory.device_total_bytes = t.device_total_bytes;
  r.memory.peak_rss_reset = t.peak_rss_reset;
  for (const auto& s : r.steps) {
    r.memory.peak_allocated_bytes = std::max(r.memory.peak_allocated_bytes, s.memory.peak_allocated_bytes);
    r.memory.peak_reserved_bytes = std::max(r.memory.peak_reserved_bytes, s.memory.peak_reserved_bytes);
    r.memory.peak_active_bytes = std::max(r.memory.peak_active_bytes, s.memory.peak_active_bytes);
    r.memory.peak_rss_bytes = std::max(r.memory.peak_rss_bytes, s.memory.peak_rss_bytes);
    r.memory.alloc_retries += s.memory.alloc_retries;
    r.memory.ooms += s.memory.ooms;
  }
  return r;
}

}  // namespace ladder
