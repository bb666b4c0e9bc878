// bench/measure/observers/memory_monitor.cpp: see memory_monitor.h.
#include "bench/measure/observers/memory_monitor.h"

#include <algorithm>

namespace ladder {

void MemoryMonitor::measurement_begins() {
  synchronize(device_);
  rss_reset_ = reset_memory_peaks(device_);
  totals_ = read_memory(device_);  // the baseline: counters at zero, peaks at the current use
  totals_.peak_rss_reset = rss_reset_;
  measuring_ = true;
}

void MemoryMonitor::before_step(int64_t, bool measured) {
  if (measuring_ && measured) rss_reset_ = reset_peak_memory(device_) && rss_reset_;
}

void MemoryMonitor::after_step(StepRecord& rec, bool measured) {
  if (!measuring_ || !measured) return;
  const MemoryStats m = read_memory(device_);
  StepMemory& s = rec.memory;
  rec.has_memory = true;
  s.cuda = device_.is_cuda();
  s.cpu_counting = m.cpu_counting;
  s.peak_active_bytes = m.peak_active_bytes;
  s.peak_reserved_bytes = m.peak_reserved_bytes;
  s.peak_allocated_bytes = m.peak_allocated_bytes;
  s.alloc_retries = m.alloc_retries - totals_.alloc_retries;  // the counters accumulate from the start
  s.ooms = m.ooms - totals_.ooms;
  s.peak_rss_bytes = m.peak_rss_bytes;
  totals_.peak_active_bytes = std::max(totals_.peak_active_bytes, m.peak_active_bytes);
  totals_.peak_reserved_bytes = std::max(totals_.peak_reserved_bytes, m.peak_reserved_bytes);
  totals_.peak_allocated_bytes = std::max(totals_.peak_allocated_bytes, m.peak_allocated_bytes);
  totals_.peak_rss_bytes = std::max(totals_.peak_rss_bytes, m.peak_rss_bytes);
  totals_.alloc_retries = m.alloc_retries;
  totals_.ooms = m.ooms;
  totals_.device_total_bytes = m.device_total_bytes;
  totals_.peak_rss_reset = rss_reset_;
}

}  // namespace ladder
