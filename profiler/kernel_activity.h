// profiler/kernel_activity.h: CUDA kernel, memcpy and memset activity from
// CUPTI, for the device side of the report's op_breakdown.
//
// CUPTI's activity API buffers one record per kernel that ran (graph
// replays included), per memcpy and per memset, plus the runtime/driver calls
// that launched them. Host code between push_phase(tag) and pop_phase() tags
// every launch it makes (CUPTI external correlation), which is how a kernel
// is known to belong to the optimizer phase. Timestamps are CUPTI's clock
// (now_ns()), the timebase of every record.
//
// Only one collector at a time, and not while a Kineto session records CUDA
// activities (both are CUPTI clients). Builds without CUPTI, and machines
// without a CUDA device, get KernelActivityUnavailable with a message that
// says so; nothing crashes.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "profiler/op_categories.h"

namespace ladder::profiler {

struct KernelActivityUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The message when CUDA reports no device.
inline constexpr const char* kNoCudaDevice = "no CUDA device: kernel activity unavailable";

struct KernelActivityRecords {
  std::vector<DeviceEvent> events;           // kernels, memcpy, memset
  std::vector<int64_t> graph_launch_ns;      // host times of cudaGraphLaunch calls
  int64_t dropped_records = 0;               // records CUPTI could not buffer
};

class KernelActivity {
 public:
  virtual ~KernelActivity() = default;
  virtual int64_t now_ns() = 0;
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
