// bench/measure/observers/memory_monitor.h: memory per step, as torchtitan's DeviceMemoryMonitor,
// on the harness's observer list (bench/measure/observers/step_observer.h).
//
// When measurement begins the allocator's peaks and counters are reset, as is
// the host's peak RSS; the cache is kept (the harness empties it before the
// warm-up steps, so they warm it again). Just before every measured step the
// peaks are reset, and just after it that step's peaks are read into its
// record (peak active, reserved and allocated bytes on CUDA; the host's VmHWM
// everywhere) with the alloc retries and OOMs it added, so each step's
// figures are its own (a trace written between two steps counts in neither).
// Both happen outside the timed region. Warm-up steps are not read.
#pragma once

#include <cstdint>

#include <torch/torch.h>

#include "bench/measure/device/device.h"
#include "bench/measure/observers/step_observer.h"

namespace ladder {

class MemoryMonitor final : public StepObserver {
 public:
  explicit MemoryMonitor(const torch::Device& device) : device_(device) {}
  void measurement_begins() override;
  void before_step(int64_t step, bool measured) override;  // resets the peaks
  void after_step(StepRecord& rec, bool measured) override;  // the step that just finished
  // Over all measured steps read so far: the largest peaks and the summed counts.
  MemoryStats totals() const { return totals_; }

 private:
  torch::Device device_;
  bool measuring_ = false;
  bool rss_reset_ = false;
  MemoryStats totals_;
};

}  // namespace ladder
