// bench/measure/device/device_types.h: the types the device layer hands out, shared by
// bench/measure/device/device.h and its CUDA adapter (bench/measure/device/device_cuda.h), which
// therefore need not include each other.
#pragma once

#include <cstdint>

namespace ladder {

// Times one interval. stop() then elapsed_ms() waits for the device.
class StepTimer {
 public:
  virtual ~StepTimer() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  virtual double elapsed_ms() = 0;
  virtual const char* method() const = 0;  // recorded in the report
};

// Memory figures of the device (and the host's peak RSS) at one moment.
struct MemoryStats {
  // CUDA caching allocator; on CPU peak_allocated_bytes is the counting
  // allocator's (bench/measure/device/cpu_allocator.h) when cpu_counting, the rest zero.
  int64_t peak_allocated_bytes = 0;
  bool cpu_counting = false;
  int64_t peak_reserved_bytes = 0;
  int64_t peak_active_bytes = 0;
  int64_t alloc_retries = 0;
  int64_t ooms = 0;
  int64_t device_total_bytes = 0;  // GPU memory, or physical RAM on CPU
  // Process peak resident set (VmHWM) since the last reset.
  int64_t peak_rss_bytes = 0;
  bool peak_rss_reset = false;  // set by the caller from reset_memory_peaks(); false: lifetime peak
  // Whether peak_allocated_bytes was measured: always by CUDA's allocator, on CPU when counted.
  bool allocated_measured(bool cuda) const { return cuda || cpu_counting; }
};

}  // namespace ladder
