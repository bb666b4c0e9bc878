// bench/cpu_allocator.cpp: see cpu_allocator.h.
#include "bench/cpu_allocator.h"

#include <malloc.h>

#include <nlohmann/json.hpp>

namespace ladder {

nlohmann::json keep_cpu_memory_in_process() {
  // Large blocks from the heap, not from mmap (other threads' arenas may
  // still mmap a block larger than their 64 MiB heaps).
  const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
  // Never give the heap's top back to the OS; grow it 256 MiB at a time.
  const bool no_trim = mallopt(M_TRIM_THRESHOLD, -1) == 1;  // -1: the largest value, no trimming
  const bool top_pad = mallopt(M_TOP_PAD, 256 << 20) == 1;
  return {{"allocator", "glibc malloc"},
          {"settings", "mallopt M_MMAP_MAX=0, M_TRIM_THRESHOLD=max, M_TOP_PAD=256 MiB"},
          {"applied", no_mmap && no_trim && top_pad},
          {"why", "freed tensors stay in the process and later steps reuse them, as the CUDA caching "
                  "allocator does; without it every step page-faults its large tensors in again"}};
}

}  // namespace ladder
