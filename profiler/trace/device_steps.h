// profiler/trace/device_steps.h: CUPTI records of the profiled steps -> the device
// side of the report's op_breakdown, and the check that it is believable.
//
// Pure functions over plain records (profiler/trace/kernel_activity.h), so the
// whole aggregation is tested on a CPU with synthetic record streams:
//  - clock: records are in the collector's ticks. CUPTI's default clock is
//    nanoseconds, but a timestamp callback registered by another CUPTI client
//    replaces it for the whole process: Kineto registers TSC cycles (2.1 per
//    ns on the first H100 host, which made every kernel look 2.1x longer).
//    Ticks are converted with two (ticks, steady ns) samples taken at start
//    and stop, so the breakdown is in real milliseconds whatever the clock;
//  - duplicates: a record delivered twice (same kind, correlation, stream,
//    start and end) is counted once;
//  - per step: activities are clipped to the step's span (first launch to
//    the end of its device work), then device_breakdown() categorises them;
//  - phases: each activity counts in the phase that was open when the call
//    that launched it was made (its launch record, by correlation id), on
//    any thread: the main thread's phases bound the autograd thread's
//    backward launches in time, so those count in backward, as Nsight's
//    nvtx_gpu_proj would count them. A CUDA graph's kernels share their
//    replay's correlation id: they count in the phase the replay was
//    launched in. Without a launch record an activity is outside the phases;
//    without any phase span there are no phases. With --layer-ranges, the
//    layer is the innermost layer range open at the launch on any thread
//    (profiler/trace/range_spans.h): forward's and backward's layer ranges are on
//    two threads but never open at the same time;
//  - the invariant: the device cannot be busy longer than the step took.
//    Per step, the union of device activity (busy_ms) must not exceed the
//    harness's dt of the same step by more than kBusySlackPct; otherwise the
//    breakdown is marked invalid and says why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace/kernel_activity.h"
#include "profiler/trace/op_categories.h"
#include "profiler/trace/range_spans.h"

namespace ladder::profiler {

// Allowed excess of busy time over the step's wall time, in percent: the
// CUDA events that time the step and CUPTI's records are two clocks, and the
// span includes the synchronisation that ends the step.
inline constexpr double kBusySlackPct = 3.0;

// Collector ticks per steady-clock nanosecond between two samples; exactly 1
// when within 0.1 % of it (CUPTI's own nanosecond clock).
double ticks_per_ns(const ClockSample& begin, const ClockSample& end);

// One profiled step: its span in collector ticks and the harness's dt.
struct DeviceStepSpan {
  int64_t begin_ticks = 0, end_ticks = 0;
  double dt_ms = 0;
};

// One phase of a step on the collector's clock, as the harness saw it open
// and close (on the thread that runs the step).
struct DevicePhaseSpan {
  DeviceEvent::Phase phase = DeviceEvent::Phase::kOutside;
  int64_t begin_ticks = 0, end_ticks = 0;
};

struct DeviceSteps {
  Breakdown total;             // summed over the steps, in ms
  int64_t steps = 0;
  double dt_ms = 0;            // the harness's dt, summed over the steps
  double ticks_per_ns = 1;
  int64_t duplicates_removed = 0;
  int64_t graph_launches = 0;  // cudaGraphLaunch calls inside the spans
  int64_t unlaunched = 0;      // with phases: activities with no launch record (outside the phases)
};

DeviceSteps analyse_device_steps(const KernelActivityRecords& records, const std::vector<DeviceStepSpan>& spans,
                                 const std::vector<DevicePhaseSpan>& phases = {},
                                 const std::vector<RangeSpan>& layers = {});

// busy_ms <= dt_ms * (1 + slack_pct / 100), per step.
struct BusyInvariant {
  double busy_ms = 0, step_dt_ms = 0, slack_pct = kBusySlackPct;
  bool holds = false;
  std::string reason;  // why not, when it does not hold
};
BusyInvariant check_busy_within_dt(double busy_ms, double step_dt_ms, double slack_pct = kBusySlackPct);

// The section's fields for it: invariant {rule, busy_ms, step_dt_ms,
// slack_pct, holds}, valid and invalid_reason.
void add_invariant(OpBreakdownSection& breakdown, const BusyInvariant& inv);

}  // namespace ladder::profiler
