// reports/model/report/rung_report.h: a rung report (report.json) as a struct.
//
// bench/measure/report/rung_report.h builds a RungReport, and to_json writes it:
// each struct below lists its fields once (profiler/common/fields.h), and
// that list is its JSON, its strict reading back (from_json) and its part of
// reports/rung_report.schema.json, which is generated from it
// (bench/measure/report/report_schema.h) and never edited by hand.
//
// Three sections convert themselves rather than list fields: the config
// (RunConfig, by its field table; its schema config_schema.h), and the
// per-step columns and their summary (step_section.h), whose keys are the
// step metrics' declarations (bench/measure/harness/step_metrics.h), one
// layer up.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/trace/breakdown_section.h"
#include "profiler/common/fields.h"
#include "profiler/trace/trace_profiler.h"
#include "reports/model/report/config_schema.h"
#include "reports/model/report/ddp_section.h"
#include "reports/model/report/environment_section.h"
#include "reports/model/report/identity_section.h"
#include "reports/model/report/memory_section.h"
#include "reports/model/report/noise_section.h"
#include "reports/model/report/roofline_section.h"
#include "reports/model/report/speed_of_light_section.h"
#include "reports/model/report/step_section.h"
#include "variants/planners/attention_plan.h"
#include "variants/data/data_section.h"
#include "variants/planners/gemm_plan_section.h"
#include "variants/config/config.h"
#include "variants/config/precision_name.h"
#include "variants/config/switch_effect.h"

namespace ladder {

using fields::Doc;
using fields::Maybe;

// The format's version: a reader refuses a newer one and upgrades an older one
// (reports/model/report/report_loader.cpp).
inline constexpr int kSchemaVersion = 3;

struct ModelFacts {
  int64_t n_params = 0, n_params_without_wpe = 0, vocab_size = 0, model_vocab = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("n_params", s.n_params, Doc().min(1));
    v("n_params_without_wpe", s.n_params_without_wpe, Doc().min(1));
    v("vocab_size", s.vocab_size, Doc().min(1));
    v("model_vocab", s.model_vocab, Doc("the vocabulary the model is built with (vocab-pad pads it)").min(1));
  }
};

struct Flops {
  int64_t flops_per_token = 0;
  std::string formula;
  double flops_per_step = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("flops_per_token", s.flops_per_token, Doc("the model's FLOPs per token (bench/measure/roofline/mfu.h)").min(1));
    v("formula", s.formula);
    v("flops_per_step", s.flops_per_step);
  }
};

struct Throughput {
  int64_t tokens_per_step = 0, tokens_per_micro_step = 0, micro_steps = 0;
  double tokens_per_s_aggregate = 0, tokens_per_s_per_device = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("tokens_per_step", s.tokens_per_step);
    v("tokens_per_micro_step", s.tokens_per_micro_step, Doc().min(1));
    v("micro_steps", s.micro_steps, Doc().min(1));
    v("tokens_per_s_aggregate", s.tokens_per_s_aggregate, "median tokens/s of the step, all ranks");
    v("tokens_per_s_per_device", s.tokens_per_s_per_device, "what MFU is taken of");
  }
};

// MFU against the datasheet's peak, where the device has an entry.
struct MfuDatasheet {
  std::optional<double> peak_tflops, mfu_pct;
  std::optional<std::string> device, source;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("peak_tflops", s.peak_tflops);
    v("device", s.device);
    v("source", s.source);
    v("mfu_pct", s.mfu_pct);
  }
};

struct RooflineSource {
  std::string measured;
  std::optional<std::string> file;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("measured", s.measured);
    v("file", s.file);
  }
};

// MFU against the matmul ceiling measured on this machine.
struct MfuRoofline {
  double peak_tflops = 0, mfu_pct = 0;
  RooflineResult probe;  // the matmul probe it divided by (reports/model/report/roofline_section.h)
  RooflineSource source;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("peak_tflops", s.peak_tflops);
    v("mfu_pct", s.mfu_pct);
    v("probe", s.probe);
    v("source", s.source,
      "where the roofline was measured: once for the run before the rungs (file: the run's roofline.json), or by "
      "this process after its steps");
  }
};

struct Mfu {
  std::string precision;
  std::string tokens_per_s_basis;
  MfuDatasheet datasheet;
  MfuRoofline measured_roofline;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("precision", s.precision, Doc("what the rung's matmuls ran in: its peak").one_of(precision_names()));
    v("tokens_per_s_basis", s.tokens_per_s_basis);
    v("datasheet", s.datasheet);
    v("measured_roofline", s.measured_roofline);
  }
};

struct MemoryMeasured {
  std::optional<int64_t> peak_allocated_bytes, peak_reserved_bytes, peak_active_bytes;
  bool allocated_active_valid = false;
  std::string allocated_active_note;
  int64_t alloc_retries = 0, ooms = 0, peak_rss_bytes = 0;
  std::string peak_rss_window;
  int64_t device_total_bytes = 0, peak_bytes = 0;
  std::string peak_kind;
  double peak_pct_of_device = 0;
  std::optional<double> peak_active_pct_of_device, peak_reserved_pct_of_device;
  std::string monitor;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("peak_allocated_bytes", s.peak_allocated_bytes,
      "peak live tensor storage over the measured steps: CUDA's allocated bytes (null under a CUDA graph), or on "
      "CPU the counting allocator's; null where not counted");
    v("peak_reserved_bytes", s.peak_reserved_bytes, "CUDA: the caching allocator's peak reserved bytes");
    v("peak_active_bytes", s.peak_active_bytes, "CUDA: the caching allocator's peak active bytes");
    v("allocated_active_valid", s.allocated_active_valid,
      "false on CPU and on the CUDA-graph path, where a replay allocates nothing and the allocated/active peaks "
      "(here and in steps.peak_*) would leave out the activations in the graph's private pool");
    v("allocated_active_note", s.allocated_active_note, "why allocated/active figures are null, or empty");
    v("alloc_retries", s.alloc_retries);
    v("ooms", s.ooms);
    v("peak_rss_bytes", s.peak_rss_bytes);
    v("peak_rss_window", s.peak_rss_window);
    v("device_total_bytes", s.device_total_bytes);
    v("peak_bytes", s.peak_bytes, Doc("the peak of peak_kind").min(0));
    v("peak_kind", s.peak_kind, Doc().one_of({"cuda_peak_reserved", "cpu_peak_rss"}));
    v("peak_pct_of_device", s.peak_pct_of_device);
    v("peak_active_pct_of_device", s.peak_active_pct_of_device,
      "CUDA: peak active bytes as % of device memory; null on CPU");
    v("peak_reserved_pct_of_device", s.peak_reserved_pct_of_device,
      "CUDA: peak reserved bytes as % of device memory; null on CPU");
    v("monitor", s.monitor, "how the memory monitor resets and reads peaks");
  }
};

struct Memory {
  MemoryMeasured measured;
  MemoryEstimate estimate;                           // bench/measure/report/memory.h estimate_memory
  std::optional<CpuAllocatorSection> cpu_allocator;  // bench/measure/device/cpu_allocator.h; null on CUDA
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("measured", s.measured);
    v("estimate", s.estimate);
    v("cpu_allocator", s.cpu_allocator,
      "CPU: the glibc malloc settings that keep freed tensors in the process, and whether LibTorch's CPU "
      "allocator is wrapped to count tensor bytes (bench/measure/device/cpu_allocator.h); null on CUDA");
  }
};

struct TimingWarmup {
  int64_t min = 0, max = 0, window = 0, steps_run = 0;
  double tolerance_pct = 0;
  std::string stopped, rule;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("min", s.min, Doc().min(0));
    v("max", s.max, Doc().min(0));
    v("window", s.window);
    v("tolerance_pct", s.tolerance_pct);
    v("steps_run", s.steps_run, Doc().min(0));
    v("stopped", s.stopped, Doc("fixed (the requested count), stable or cap").one_of({"fixed", "stable", "cap"}));
    v("rule", s.rule);
  }
};

struct Timing {
  std::string mode, timer;
  int64_t warmup_steps_excluded = 0, measured_steps = 0;
  TimingWarmup warmup;
  double measured_wall_ms = 0;
  std::optional<double> test_slowdown_pct, host_steal_ms, host_steal_pct_of_wall;
  double harness_overhead_ms_per_step = 0, harness_overhead_pct_of_dt = 0;
  double data_ms_per_step = 0, data_pct_of_dt = 0;
  std::string data_time;
  std::optional<NoiseSection> noise;  // bench/measure/observers/noise_monitor.h; null for a peer
  template <class S, class V>
  static void fields(S& s, V& v);
};

// Loss parity against the reference (bench/run/parity.h): pending or not
// checked as the process writes it, the verdict once the runner checked it.
struct Parity {
  std::string status, parity_class;
  double rtol = 0;
  Maybe<std::string> reference, subject, reason, worst_quantity;
  Maybe<int64_t> steps_compared;
  Maybe<std::optional<double>> max_rel_diff, grad_norm_max_rel_diff, worst_rel_diff;
  Maybe<std::vector<double>> subject_losses, reference_losses;
  Maybe<std::optional<std::string>> failed_quantity;
  template <class S, class V>
  static void fields(S& s, V& v);
};

struct RankOutcome {
  int64_t rank = 0;
  std::string outcome;
  double seconds = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("rank", s.rank, Doc().min(0));
    v("outcome", s.outcome);
    v("seconds", s.seconds);
  }
};

// How a process that ran no complete measurement ended.
struct Failure {
  std::string reason;
  Maybe<std::string> message, phase;
  Maybe<int64_t> step, rank, first_failed_rank, repeat;
  Maybe<std::optional<int64_t>> exit_code;
  Maybe<std::optional<std::string>> signal;
  Maybe<double> seconds;
  Maybe<std::vector<RankOutcome>> ranks;
  template <class S, class V>
  static void fields(S& s, V& v);
};

struct RungReport {
  int64_t schema_version = 0;
  std::string kind, run_id, rung, status, started_at, finished_at;
  RunConfig config;  // variants/config/config.h: read by its field table, its schema config_schema()
  Maybe<SuiteSection> suite;  // reports/model/report/identity_section.h
  Maybe<std::optional<SolSection>> speed_of_light;  // reports/model/report/speed_of_light_section.h; null before it
  Maybe<PeerSection> peer;  // a PyTorch peer's report only
  Maybe<SwitchEffects> switches;  // variants/config/switch_effect.h
  Maybe<EnvironmentSection> environment;  // reports/model/report/environment_section.h
  Maybe<std::optional<DdpSection>> ddp;  // the ddp rung's ranks (reports/model/report/ddp_section.h); null for others
  // fused-linear's GEMM plan (variants/planners/gemm_plan_section.h); null without fused linears
  Maybe<std::optional<GemmPlanSection>> gemm_plan;
  Maybe<std::optional<profiler::OpCounts>> op_counts;            // null with --no-op-count
  Maybe<std::optional<profiler::OpBreakdownSection>> op_breakdown;  // profiler/trace/breakdown_section.h
  Maybe<int64_t> world_size;
  Maybe<ModelFacts> model;
  Maybe<Timing> timing;
  Maybe<Flops> flops;
  Maybe<Throughput> throughput;
  Maybe<Mfu> mfu;
  Maybe<Memory> memory;
  Maybe<StepColumns> steps, warmup_steps;
  Maybe<StepSummary> summary;
  Maybe<Parity> parity;
  Maybe<Failure> failure;
  Maybe<DataSection> data;  // what the steps read (variants/data/data_section.h)
  Maybe<std::optional<profiler::ProfileSection>> profile;  // --profile's traces; null without
  // The flash rung's SDPA backend (variants/planners/attention_plan.h); null for
  // explicit attention, absent in reports from before the planner.
  Maybe<std::optional<AttentionPlan>> attention_plan;
  template <class S, class V>
  static void fields(S& s, V& v);
  // summary.<metric>.<stat>, e.g. summary_value("dt_ms") is the median step
  // time; nullopt where the report has no such figure.
  std::optional<double> summary_value(const std::string& metric, double Summary::*stat = &Summary::median) const;
  // What the fields cannot say: an ok report has every section, another a
  // failure; a peer's (rung peer-*) has its peer section, a rung's none.
  static void schema_extra(nlohmann::json& schema);
};

// The report's sections an ok report has (schema_extra's list).
const std::vector<std::string>& ok_report_sections();

template <class S, class V>
void Timing::fields(S& s, V& v) {
  v("mode", s.mode, Doc().one_of({"end_to_end", "phase_synchronized"}));
  v("timer", s.timer, Doc().one_of({"steady_clock", "cuda_events"}));
  v("warmup_steps_excluded", s.warmup_steps_excluded);
  v("measured_steps", s.measured_steps);
  v("warmup", s.warmup,
    "warm-up until stable: after min steps, until the last `window` steps' dt lie within tolerance_pct of their "
    "minimum, at most max steps");
  v("measured_wall_ms", s.measured_wall_ms);
  v("test_slowdown_pct", s.test_slowdown_pct,
    "test-only LADDER_TEST_SLOWDOWN_PCT: each step waited this share of its own time more; null when unset");
  v("host_steal_ms", s.host_steal_ms,
    "CPU time the hypervisor gave other guests during the measured steps, summed over the host's CPUs (/proc/stat "
    "steal, 10 ms ticks); null where unreadable");
  v("host_steal_pct_of_wall", s.host_steal_pct_of_wall,
    "host_steal_ms as a share of the measured wall time times the CPU count");
  v("harness_overhead_ms_per_step", s.harness_overhead_ms_per_step);
  v("harness_overhead_pct_of_dt", s.harness_overhead_pct_of_dt);
  v("data_ms_per_step", s.data_ms_per_step, Doc().min(0));
  v("data_pct_of_dt", s.data_pct_of_dt, Doc("100 * sum(data_ms) / sum(dt_ms) over the measured steps").min(0));
  v("data_time", s.data_time, "what steps.data_ms measures");
  v("noise", s.noise,
    Doc("what disturbed the measured steps (bench/measure/observers/noise_monitor.h): CPU time against the threads' wall "
        "time, involuntary context switches, steal, load average, and on CUDA the GPU's clocks, temperature, power "
        "and throttle reasons at start and end; causes names what passed a threshold. Null for a peer."));
}

template <class S, class V>
void Parity::fields(S& s, V& v) {
  v("status", s.status, Doc().one_of({"pass", "fail", "baseline", "unavailable", "pending", "not_checked"}));
  v("class", s.parity_class, Doc("the rung's numerics: its tolerance").one_of({"fp32-exact", "tf32", "bf16"}));
  v("rtol", s.rtol, Doc().above(0));
  v("reference", s.reference);
  v("subject", s.subject);
  v("steps_compared", s.steps_compared);
  v("max_rel_diff", s.max_rel_diff);
  v("subject_losses", s.subject_losses);
  v("reference_losses", s.reference_losses);
  v("reason", s.reason);
  v("grad_norm_max_rel_diff", s.grad_norm_max_rel_diff);
  v("worst_quantity", s.worst_quantity,
    Doc("the quantity that decided the verdict: the one that failed, or the closer to its tolerance")
        .one_of({"loss", "grad_norm"}));
  v("worst_rel_diff", s.worst_rel_diff, "its max relative difference (null: NaN)");
  v("failed_quantity", s.failed_quantity,
    Doc("the quantity that failed, or null when parity passed").one_of({"loss", "grad_norm"}));
}

template <class S, class V>
void Failure::fields(S& s, V& v) {
  v("reason", s.reason);
  v("message", s.message);
  v("phase", s.phase);
  v("step", s.step);
  v("rank", s.rank, Doc("the rank that wrote this report").min(0));
  v("exit_code", s.exit_code);
  v("signal", s.signal);
  v("seconds", s.seconds);
  v("repeat", s.repeat, Doc("the round, said when > 1").min(2));
  v("first_failed_rank", s.first_failed_rank, Doc().min(0));
  v("ranks", s.ranks, "a ddp job's ranks: how each ended");
}

template <class S, class V>
void RungReport::fields(S& s, V& v) {
  v("schema_version", s.schema_version, Doc().one_of({kSchemaVersion}));
  v("kind", s.kind, Doc().one_of({"ladder.rung_report"}));
  v("run_id", s.run_id, Doc().matching("."));
  v("rung", s.rung, Doc().matching("."));
  v("status", s.status,
    Doc("ok, or why the rung produced no figures (skipped: a peer that cannot run here, e.g. no Python with torch)")
        .one_of({"ok", "failed", "oom", "diverged", "crashed", "timeout", "skipped"}));
  v("started_at", s.started_at, Doc().as("date-time"));
  v("finished_at", s.finished_at, Doc().as("date-time"));
  v("suite", s.suite, "the build that wrote the report");
  v("config", s.config, Doc().shaped(config_schema()));
  v("environment", s.environment);
  v("world_size", s.world_size, Doc().min(1));
  v("data", s.data);
  v("model", s.model);
  v("timing", s.timing);
  v("flops", s.flops);
  v("throughput", s.throughput);
  v("mfu", s.mfu);
  v("memory", s.memory);
  v("steps", s.steps);
  v("warmup_steps", s.warmup_steps);
  v("summary", s.summary);
  v("switches", s.switches,
    "what each switch of the rung did on this device: one entry per switch declared in variants/switches/ "
    "(`ladder switches` lists them), under its declared name");
  v("parity", s.parity);
  v("op_counts", s.op_counts);
  v("failure", s.failure);
  v("ddp", s.ddp, "the ddp rung: every rank's figures (rank 0 gathers them) and their spread; null for other rungs");
  v("op_breakdown", s.op_breakdown,
    "where one step's time went, by category (bench/measure/harness/op_breakdown.h, profiler/trace/op_categories.h); null with "
    "--no-op-count or a build without the profiler");
  v("speed_of_light", s.speed_of_light);
  v("gemm_plan", s.gemm_plan,
    "The GEMM plan of fused-linear's epilogue GEMM sites (variants/planners/gemm_plan.h): per site the choice, why, and every "
    "candidate's timings and cuBLASLt algorithm; null when the rung has no fused linears. `ladder run --gemm-plan "
    "report.json` reruns it.");
  v("attention_plan", s.attention_plan, Doc("the flash rung's attention plan: which SDPA backend runs, and why"));
  v("profile", s.profile);
  v("peer", s.peer,
    "present only in a PyTorch peer's report (bench/run/peers.h): what ran instead of ladder's step. Its flops, "
    "mfu, summary, memory.estimate and parity are filled by `ladder run` as for a rung");
}

}  // namespace ladder
