// bench/measure/report/rung_report.h: the one builder of a rung report (report.json): for a
// rung measured by this build's harness, for a PyTorch peer, and for a
// process that failed (from inside it, or from the runner for a child that
// left none), each from typed parts, nothing patched into it afterwards;
// rank 0's ddp section too, from every rank's figures (DdpFacts).
//
// What a process measured comes in two parts: its steps (the harness's
// HarnessResult: warm-up and measured StepRecords, timing, memory peaks) and
// the facts around them (MeasuredRun: the config, environment, what each
// switch did, the model, the data, the op breakdown). Everything the report
// derives from those, the summary statistics, FLOPs, throughput, MFU against
// the datasheet and the measured roofline, the memory section with its
// estimate, the timing section and the per-step columns, is computed here
// once (reports/rung_report.schema.json describes the result).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "bench/measure/harness/harness.h"
#include "bench/measure/roofline/roofline.h"
#include "reports/model/report/rung_report.h"
#include "variants/config/config.h"
#include "variants/switches/switch.h"

namespace ladder {

// What rank 0 of a ddp job knows for its report's ddp section: its process
// group, and every rank's figures (per-step arrays and medians, rank 0 first).
struct DdpFacts {
  int world_size = 1;
  std::string backend, launcher, master;
  double first_timeout_s = 0, timeout_s = 0, connect_timeout_s = 0;
  std::vector<std::string> interfaces;  // the network interfaces counted on rank 0's host
  bool zero1 = false;
  std::optional<TestSlowRank> test_slow_rank;  // the test hook (bench/measure/observers/rank_slowdown.h)
  std::vector<RankFigures> per_rank;
};

struct MeasuredRun {
  RunConfig cfg;
  std::string run_id, started_at;
  std::vector<std::string> argv;
  torch::Device device{torch::kCPU};
  std::string device_name;       // "NVIDIA H100 80GB HBM3", or the CPU model
  EnvironmentSection environment;  // describe_environment
  SwitchEffects switches;        // report.switches: what each switch did
  std::optional<StepPlan> plan;  // what the step ran (TrainStep::plan); absent: plan_for(cfg)
  std::optional<GemmPlanSection> gemm_plan;  // report.gemm_plan: fused-linear's GEMM plan (empty without fused linears)
  std::optional<AttentionPlan> attention_plan;  // report.attention_plan: the SDPA backend (empty without SDPA)
  DataSection data;              // what the steps read (TokenSource::describe)
  int64_t n_params = 0, n_params_without_wpe = 0;
  std::optional<profiler::OpCounts> op_counts;                // empty when not measured
  std::optional<profiler::OpBreakdownSection> op_breakdown;  // empty when not measured
  std::optional<profiler::ProfileSection> profile;  // --profile's traces (empty without it)
  std::optional<DdpFacts> ddp;   // rank 0 of a ddp job
  std::optional<CpuAllocatorSection> cpu_allocator;  // keep_cpu_memory_in_process on CPU; none on CUDA
  bool graph = false;            // CUDA-graph replays: allocated/active peaks miss the graph's pool
  std::string memory_monitor;    // how the per-step peaks were read (memory.measured.monitor)
  std::string data_time;         // what steps.data_ms measures (timing.data_time)
  // MFU is per device: a GPU, or a host's whole CPU, which the ranks of a CPU
  // ddp job share (the run roofline measured it with all its cores).
  int devices = 1;
  std::string tokens_basis = "median tokens_per_s_per_device";
  RooflineInUse roofline;          // the run's roofline.json, read once; none or unusable: probe here
  std::string roofline_probe_by = "this process, after its steps";
  // A PyTorch peer's report (bench/run/peers.h): what its own process says of
  // itself, and why its parity is not checked. Empty or null for a rung.
  std::optional<SuiteSection> suite;  // its program's suite and peer sections
  std::optional<PeerSection> peer;
  std::string finished_at;       // its own clock; "" now
  std::string parity_not_checked;  // the parity's reason; "" pending (the runner checks it)
};

// A ddp job's ranks when it failed: the first to fail, and how each ended
// (the runner's view, bench/run/job.cpp).
struct RankFailures {
  std::optional<int64_t> first_failed_rank;
  std::vector<RankOutcome> ranks;
};

// How a process ended that ran no complete measurement: the failure section
// of its report. From inside the process (measure: an exception, an OOM, a
// divergence, with the step and phase) or from the runner for a child that
// left no report (its exit code, signal and time).
struct FailureFacts {
  std::string status;  // failed, oom, diverged, crashed, timeout, skipped, ...
  std::string reason;
  std::optional<std::string> message, phase;
  std::optional<int64_t> step;
  std::optional<int> rank;
  bool child_ended = false;  // the runner's view: exit_code, signal, seconds
  std::optional<int> exit_code;
  std::optional<std::string> signal;
  double seconds = 0;
  int repeat = 1;            // the round, said when > 1
  RankFailures ranks;        // a ddp job's outcomes; none for one process
};

// The report of a process whose steps all ran: status "ok", parity pending
// (the runner checks it against the baseline's losses), or not checked (a peer).
nlohmann::json build_rung_report(const MeasuredRun& m, const HarnessResult& r);

// The report of a process that failed: its header, status and failure
// section; `peer` a peer's identity section (null for a rung).
nlohmann::json build_failure_report(const RunConfig& c, const std::string& run_id,
                                    const std::vector<std::string>& argv, const std::string& started_at,
                                    const FailureFacts& f, const std::optional<PeerSection>& peer = std::nullopt);

// The same harness result from a list of steps run back to back and timed
// alike (a peer's records): the warm-up rule (warmup_done) decides where
// measurement starts, then the next cfg.steps are measured; steps after them
// are dropped. `wall_ms` and `steal_ms` hold each step's host clock and the
// host's steal counter at its end, with `*_before` the values before the
// first step; they give measured_wall_ms, the harness overhead and the steal.
struct TimedSteps {
  std::vector<StepRecord> steps;
  std::vector<double> wall_ms, steal_ms;  // parallel to steps; steal_ms empty: unreadable
  double wall_before_ms = 0, steal_before_ms = 0;
  std::string timer_method;
  int64_t device_total_bytes = 0;
  bool peak_rss_reset = false;
  double test_slowdown_pct = 0;  // the test-only hook's (bench/measure/harness/harness.h); 0 when unset
};
HarnessResult harness_result_of(const TimedSteps& t, const RunConfig& cfg);

}  // namespace ladder
