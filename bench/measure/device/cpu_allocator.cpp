// bench/measure/device/cpu_allocator.cpp: see cpu_allocator.h.
#include "bench/measure/device/cpu_allocator.h"

#include <malloc.h>

#include <atomic>
#include <cstddef>

#include <c10/core/CPUAllocator.h>
#include <nlohmann/json.hpp>

namespace ladder {

namespace {

std::atomic<int64_t> g_current{0}, g_peak{0};
std::atomic<bool> g_counting{false};

void raise_peak(int64_t now) {
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

// LibTorch's default CPU allocator, with the bytes of every live storage
// counted. Each block is kHeader bytes longer, its size written in front of
// the data (kHeader keeps the data as aligned as the inner allocator's), so
// the storage stays a plain pointer (data == context, as raw_allocate and
// raw_deleter require) and a free, from whichever thread, subtracts the size
// it was allocated with.
constexpr size_t kHeader = 64;
static_assert(kHeader % alignof(std::max_align_t) == 0 && kHeader >= c10::gAlignment);
c10::DeleterFnPtr g_inner_free = nullptr;

class CountingCpuAllocator final : public c10::Allocator {
 public:
  explicit CountingCpuAllocator(c10::Allocator* inner) : inner_(inner) {}

  c10::DataPtr allocate(size_t n) override {
    c10::DataPtr got = inner_->allocate(n + kHeader);
    auto* base = static_cast<char*>(got.release_context());
    *reinterpret_cast<int64_t*>(base) = int64_t(n);
    raise_peak(g_current.fetch_add(int64_t(n), std::memory_order_relaxed) + int64_t(n));
    return {base + kHeader, base + kHeader, &CountingCpuAllocator::free, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &CountingCpuAllocator::free; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
  static void free(void* data) {
    if (!data) return;
    char* base = static_cast<char*>(data) - kHeader;
    g_current.fetch_sub(*reinterpret_cast<int64_t*>(base), std::memory_order_relaxed);
    g_inner_free(base);
  }

 private:
  c10::Allocator* inner_;
};

}  // namespace

bool count_cpu_tensors() {
  static const bool installed = [] {
    c10::Allocator* inner = c10::GetDefaultCPUAllocator();
    {
      c10::DataPtr probe = inner->allocate(kHeader);
      if (probe.get() != probe.get_context() || !probe.get_deleter()) return false;
      g_inner_free = probe.get_deleter();
    }
    static CountingCpuAllocator counting(inner);
    c10::SetCPUAllocator(&counting, /*priority=*/1);
    g_counting = c10::GetCPUAllocator() == &counting;
    return g_counting.load();
  }();
  return installed;
}

CpuAllocated cpu_allocated() {
  return {g_counting.load(), g_current.load(std::memory_order_relaxed), g_peak.load(std::memory_order_relaxed)};
}

void reset_cpu_allocated_peak() { g_peak.store(g_current.load(std::memory_order_relaxed), std::memory_order_relaxed); }

CpuAllocatorSection keep_cpu_memory_in_process() {
  // Large blocks from the heap, not from mmap (other threads' arenas may
  // still mmap a block larger than their 64 MiB heaps).
  const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
  // Never give the heap's top back to the OS; grow it 256 MiB at a time.
  const bool no_trim = mallopt(M_TRIM_THRESHOLD, -1) == 1;  // -1: the largest value, no trimming
  const bool top_pad = mallopt(M_TOP_PAD, 256 << 20) == 1;
  const bool counting = count_cpu_tensors();
  CpuAllocatorSection s;
  s.allocator = "glibc malloc";
  s.settings = "mallopt M_MMAP_MAX=0, M_TRIM_THRESHOLD=max, M_TOP_PAD=256 MiB";
  s.applied = no_mmap && no_trim && top_pad;
  s.counting = counting;
  s.counting_note = "LibTorch's CPU allocator wrapped to count live tensor storage bytes and their peak "
                    "(memory.measured.peak_allocated_bytes, steps.peak_allocated_bytes)";
  s.why = "freed tensors stay in the process and later steps reuse them, as the CUDA caching allocator does; "
          "without it every step page-faults its large tensors in again";
  return s;
}

}  // namespace ladder
