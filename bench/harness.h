// bench/harness.h: the only code that times anything.
//
// Runs warmup steps (excluded from figures), then N measured steps. Each step
// is bracketed by a StepTimer (CUDA events or a steady clock). The data phase
// is always timed on the host (data_ms: how long the step waited for its
// batch and issued its copy to the device; no synchronisation, so on CUDA a
// non_blocking copy still in flight is not counted). In breakdown
// mode the device is synchronised at every phase boundary to time data,
// forward, backward and optimizer separately; that perturbs dt, so the mode
// is recorded. Memory is read per measured step by a MemoryMonitor (the CUDA
// cache is emptied before the warmup steps, which fill it again, and peaks
// are reset when measurement starts, so no measured step pays cudaMalloc). The measured
// loop is one "measured steps" range (profiler/range.h; the nsys capture
// range). A profiler follows the loop through profiler::StepHooks; with none
// attached, nothing of it runs.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "bench/device.h"
#include "bench/memory_monitor.h"
#include "profiler/step_hooks.h"
#include "variants/config.h"
#include "variants/step.h"

namespace ladder {

struct StepRecord {
  int64_t step = 0;
  double dt_ms = 0;
  double tokens_per_s = 0;
  double loss = 0;
  double grad_norm = 0;
  double lr = 0;
  int64_t tokens = 0;
  // Host wall time in the data phase, summed over micro-steps (see above).
  double data_ms = 0;
  bool has_phases = false;
  std::array<double, 4> phase_ms{};  // indexed like kPhases
  // ddp: the gradient all-reduce of this step, from the comm events.
  bool has_comm = false;
  int buckets = 0;
  int64_t allreduce_bytes = 0;
  double allreduce_ms = 0;          // wall time some bucket was in flight (union of intervals)
  double allreduce_exposed_ms = 0;  // in flight after backward's compute ended (the wait)
  double overlap_pct = 0;           // share of allreduce_ms hidden behind backward
  bool has_memory = false;           // measured steps only
  StepMemory memory;
};

// Warm-up is stable when the last kWarmupWindow steps' dt lie within
// tolerance_pct (RunConfig::warmup_tolerance_pct) of their minimum.
inline constexpr int kWarmupWindow = 3;
bool warmup_is_stable(const std::vector<StepRecord>& warmup_steps, double tolerance_pct);

struct HarnessResult {
  std::vector<StepRecord> warmup_steps;
  // Why warm-up ended: "fixed" (the requested count), "stable" or "cap"
  // (warmup_max reached before the steps agreed).
  std::string warmup_stopped;
  int64_t next_step = 0;  // the first step after the measured ones
  std::vector<StepRecord> steps;  // measured
  std::string timer_method;
  std::string timing_mode;  // "end_to_end" or "phase_synchronized"
  double measured_wall_ms = 0;  // wall time of the measured loop
  // Wall time per measured step spent outside the timed step (bookkeeping,
  // reading the loss, progress output): measured_wall_ms - sum(dt), / steps.
  double harness_overhead_ms_per_step = 0;
  MemoryStats memory;
  double test_slowdown_pct = 0;  // the test-only slowdown hook (below); 0 when unset
  // CPU time the hypervisor gave to other guests during the measured loop,
  // summed over this host's CPUs (/proc/stat steal); -1 when unreadable.
  double host_steal_ms = -1;
};

// Test-only: LADDER_TEST_SLOWDOWN_PCT=P makes every step wait P % of its
// own host time more inside the timed region: a known, real difference for
// compare's A/B test. The report records it (timing.test_slowdown_pct).
inline constexpr const char* kTestSlowdownEnv = "LADDER_TEST_SLOWDOWN_PCT";
double test_slowdown_pct();  // from the environment; ConfigError if malformed

using StepCallback = std::function<void(const StepRecord&, bool warmup)>;

// Where the harness is: updated at every phase boundary (two stores), so a
// failure (an OOM, say) can be reported with the step and phase it hit.
struct Position {
  int64_t step = -1;
  const char* phase = "setup";
};

// `hooks` (a trace profiler) follows the warmup and measured steps.
HarnessResult run_measurement(TrainStep& step, const RunConfig& cfg, const torch::Device& device,
                              const StepCallback& on_step, Position* position = nullptr,
                              profiler::StepHooks* hooks = nullptr);

// Runs `n` more steps from step `first` for a collector (the op breakdown),
// timed like measured steps, with `hooks` and `observer` attached. Returns
// their records (dt_ms is the harness's figure for each).
std::vector<StepRecord> run_extra_steps(TrainStep& step, const torch::Device& device, int64_t first, int64_t n,
                                        profiler::StepHooks& hooks, PhaseObserver& observer);

}  // namespace ladder
