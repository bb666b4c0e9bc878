// profiler/trace/kernel_activity.h: CUDA kernel, memcpy and memset activity from
// CUPTI, for the device side of the report's op_breakdown.
//
// CUPTI's activity API buffers one record per kernel that ran (graph
// replays included), per memcpy and per memset, plus the runtime/driver calls
// that launched them (their time: each kernel's phase is the one open when
// it was launched, profiler/trace/device_steps.h). Host code between
// push_phase(tag) and pop_phase() also tags every launch it makes (CUPTI
// external correlation), which marks the optimizer's kernels even where a
// launch record is missing. Timestamps are CUPTI's clock
// (now_ticks()), the timebase of every record; profiler/trace/device_steps.h turns
// them into a breakdown per step.
//
// Only one collector at a time, and not while a Kineto session records CUDA
// activities (both are CUPTI clients). Builds without CUPTI, and machines
// without a CUDA device, get KernelActivityUnavailable with a message that
// says so; nothing crashes.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiler/trace/op_categories.h"

namespace ladder::profiler {

struct KernelActivityUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The message when CUDA reports no device.
inline constexpr const char* kNoCudaDevice = "no CUDA device: kernel activity unavailable";

// One activity record as CUPTI delivers it. Times are in the collector's
// clock ticks (now_ticks()): nanoseconds by default, but whatever a
// timestamp callback registered with CUPTI returns once one is (Kineto
// registers TSC cycles), so they are converted with the ClockSamples below.
struct ActivityRecord {
  DeviceEvent::Kind kind = DeviceEvent::Kind::kKernel;
  std::string name;
  int64_t start = 0, end = 0;   // collector ticks
  uint32_t correlation_id = 0;  // the launching API call (a graph launch for its kernels)
  uint32_t stream_id = 0;
  bool in_optimizer = false;    // launched while the step was in its optimizer phase
};

// The collector's clock and the host's steady clock read at one instant.
struct ClockSample {
  int64_t ticks = 0;
  int64_t steady_ns = 0;
};

// A CUDA runtime or driver call (CUPTI's API record): what launched a kernel,
// memcpy or memset with its correlation id, and when (on any thread: the
// phase and layer open then count, profiler/trace/device_steps.h).
struct LaunchRecord {
  uint32_t correlation_id = 0;
  int64_t start = 0;  // collector ticks
};

struct KernelActivityRecords {
  std::vector<ActivityRecord> records;       // kernels, memcpy, memset
  std::vector<LaunchRecord> launches;        // the runtime and driver calls
  std::vector<int64_t> graph_launch_ticks;   // cudaGraphLaunch calls
  int64_t dropped_records = 0;               // records CUPTI could not buffer
  ClockSample clock_begin, clock_end;        // at start and at stop, to convert ticks
};

class KernelActivity {
 public:
  virtual ~KernelActivity() = default;
  // The collector's clock, the timebase of every record.
  virtual int64_t now_ticks() = 0;
  // Tags launches until pop_phase(); `optimizer` marks the optimizer phase.
  virtual void push_phase(bool optimizer) = 0;
  virtual void pop_phase() = 0;
  // Flushes CUPTI's buffers and stops collecting.
  virtual KernelActivityRecords stop() = 0;
};

// Starts collecting. Throws KernelActivityUnavailable: kNoCudaDevice when the
// CUDA runtime sees no device, a note that the build has no CUPTI, or the
// CUPTI call that failed with its file:line and CUPTI's error string.
std::unique_ptr<KernelActivity> start_kernel_activity();

}  // namespace ladder::profiler
