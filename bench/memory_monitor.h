// bench/memory_monitor.h: memory per step, as torchtitan's DeviceMemoryMonitor.
//
// At construction (the start of measurement) the allocator's peaks and
// counters are reset, as is the host's peak RSS; the cache is kept (the
// harness empties it before the warmup steps, so they warm it again).
// Just before every measured step the harness resets the peaks, and just
// after it reads that step's peaks (peak active, reserved and allocated bytes
// on CUDA; the host's VmHWM everywhere) and the alloc retries and OOMs it
// added, so each step's figures are its own (a trace written between two
// steps counts in neither). Both happen outside the timed region.
#pragma once

#include <cstdint>

#include <torch/torch.h>

#include "bench/device.h"

namespace ladder {

struct StepMemory {
  bool cuda = false;                 // whether the allocator fields below are measured
  int64_t peak_active_bytes = 0;     // CUDA caching allocator
  int64_t peak_reserved_bytes = 0;
  int64_t peak_allocated_bytes = 0;
  int64_t alloc_retries = 0;         // added during this step
  int64_t ooms = 0;
  int64_t peak_rss_bytes = 0;        // host VmHWM during this step
};

class MemoryMonitor {
 public:
  explicit MemoryMonitor(const torch::Device& device);
  void before_step();     // resets the peaks
  StepMemory after_step();  // the step that just finished
  // Over all steps read so far: the largest peaks and the summed counts.
  MemoryStats totals() const { return totals_; }

 private:
  torch::Device device_;
  bool rss_reset_ = false;
  MemoryStats totals_;
};

}  // namespace ladder
