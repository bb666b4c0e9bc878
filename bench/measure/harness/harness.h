// bench/measure/harness/harness.h: the only code that times steps.
//
// Runs warm-up steps (excluded from figures), then N measured steps. Each step
// is bracketed by a StepTimer (CUDA events or a steady clock). The data phase
// is always timed on the host (data_ms: how long the step waited for its
// batch and issued its copy to the device; no synchronisation, so on CUDA a
// non_blocking copy still in flight is not counted). Every phase of every
// step is timed (steps.phase_ms): by the device's step timer at its
// boundaries (CUDA events; the host clock on a CPU), read after the step, so
// nothing inside the step synchronises and timing.mode stays end_to_end. In
// breakdown mode the device is synchronised at every phase boundary instead;
// that perturbs dt, so the mode is recorded. Memory is read per measured step (the CUDA cache is emptied
// before the warm-up steps, which fill it again, and peaks are reset when
// measurement starts, so no measured step pays cudaMalloc). The measured loop
// is one "measured steps" range (profiler/ranges/range.h; the nsys capture range).
//
// Whatever else watches the steps (a trace profiler, the progress line, where
// a failure happened, test hooks) is a StepObserver (bench/measure/observers/step_observer.h)
// passed in `watchers`; the harness's own clocks, the memory monitor and the
// noise monitor are on the same list, innermost. Before the warm-up and after
// the measured steps it runs the speed probe (bench/measure/observers/speed_probe.h), timed by
// the same step timer: timing.noise.probe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "bench/measure/device/device.h"
#include "bench/measure/observers/memory_monitor.h"
#include "bench/measure/observers/step_observer.h"
#include "bench/measure/observers/step_record.h"
#include "variants/config/config.h"
#include "variants/step/step.h"

namespace ladder {

// Warm-up is stable when the last kWarmupWindow steps' dt lie within
// tolerance_pct (RunConfig::warmup_tolerance_pct) of their minimum.
inline constexpr int kWarmupWindow = 3;
bool warmup_is_stable(const std::vector<StepRecord>& warmup_steps, double tolerance_pct);
// The warm-up rule, the one place it is written: whether warm-up is over
// after `warm`: at least cfg.warmup steps; then, when warming up until stable
// (RunConfig::warmup_until_stable), once they are stable or cfg.warmup_max
// ran. `why` gets "fixed", "stable" or "cap". The harness asks it before every
// warm-up step; a peer's recorded steps are split by it (bench/measure/report/rung_report.h).
bool warmup_done(const std::vector<StepRecord>& warm, const RunConfig& cfg, std::string* why = nullptr);

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
  // What disturbed the measured loop (bench/measure/observers/noise_monitor.h); null when not read.
  std::optional<NoiseSection> noise;
};

// Test-only: LADDER_TEST_SLOWDOWN_PCT=P makes every measured step wait P %
// of its own host time more inside the timed region, busy (a sleep would let
// the core idle and slow the next step as well): a known, real difference for
// compare's A/B tests. The report records it (timing.test_slowdown_pct).
// Given to `ladder run` as P@CELL or P@CELL@ROUND (CELL as the run table
// names it: fp32, peer:eager, B/flash), it slows that cell alone, in every
// round or in that one: a disturbed process, for the test of cells
// (reports/stats/block_design.h). The runner passes P to that process and
// unsets it for the others (bench/run/job.cpp); `ladder measure` refuses it.
inline constexpr const char* kTestSlowdownEnv = "LADDER_TEST_SLOWDOWN_PCT";
struct TestSlowdown {
  double pct = 0;
  std::string cell;  // "": every process
  int round = 0;     // 0: every round
};
// From the environment (pct 0 when unset); ConfigError naming the variable,
// its value and the form expected when malformed.
TestSlowdown test_slowdown();
double test_slowdown_pct();  // an untargeted one; ConfigError for a targeted one or a malformed value

// Where the harness is: the step and phase a failure (an OOM, say) hit, for
// the failure report. On the list, it follows every step and phase.
struct Position final : StepObserver {
  int64_t step = -1;
  const char* phase = "setup";
  void before_step(int64_t s, bool) override { step = s; }
  void phase_begins(Phase p) override { phase = phase_name(p); }
  void measurement_ends(int64_t) override { phase = "after measurement"; }
};

// Warm-up and measured steps of `step`, watched by `watchers` (outer to the
// harness's own observers, first innermost) and by `inner` (inside them: a
// test hook whose work the phase clock must time, bench/measure/observers/rank_slowdown.h).
HarnessResult run_measurement(TrainStep& step, const RunConfig& cfg, const torch::Device& device,
                              const std::vector<StepObserver*>& watchers = {},
                              const std::vector<StepObserver*>& inner = {});

// Runs `n` more steps from step `first` for a collector (the op breakdown),
// timed like measured steps, watched by `watchers` (first innermost). Returns
// their records (dt_ms is the harness's figure for each).
std::vector<StepRecord> run_extra_steps(TrainStep& step, const torch::Device& device, int64_t first, int64_t n,
                                        const std::vector<StepObserver*>& watchers);

}  // namespace ladder
