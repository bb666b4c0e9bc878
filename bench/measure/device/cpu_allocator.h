// bench/measure/device/cpu_allocator.h: keeps freed tensor memory in the process on CPU, as
// the CUDA caching allocator does on GPUs.
//
// LibTorch's CPU tensors come from glibc malloc, which serves every block of
// 32 MiB or more (logits, the embedding's gradient, AdamW's state) with a
// fresh mmap and returns it with munmap when the tensor dies. Every step
// then faults its large tensors in again: at gpt2-124m B4 T64 that was
// 4.2 million page faults in 17 steps (about 1 GiB per step), 16 % of the
// step time, and the steps' spread (the first steps 1.5-9x the rest). With
// mmap off and no trimming, freed blocks stay in the heap and later steps
// reuse them: 0.72 million faults, and dt 1435 ms against 1717 ms.
// (Measured with `/usr/bin/time ladder measure --device cpu --preset
// gpt2-124m --batch 4 --seq 64`, with and without these settings.)
//
// The resident set cannot say what the tensors hold: freed blocks stay in it
// (by design, above) and the heap fragments. So LibTorch's CPU allocator is
// also wrapped to count the bytes of live tensor storage, with its peak, as
// CUDA's caching allocator counts allocated bytes: that is what a memory
// estimate (bench/measure/report/memory.h) predicts, and what act-ckpt and zero1 change.
#pragma once

#include <cstdint>

#include "reports/model/report/memory_section.h"

namespace ladder {

// Sets glibc malloc's options for this process (mallopt), puts the counting
// allocator in front of LibTorch's CPU allocator, and returns what was set,
// for the report. Call before the model is built.
CpuAllocatorSection keep_cpu_memory_in_process();

// Puts the counting allocator in front of LibTorch's CPU allocator, once per
// process (keep_cpu_memory_in_process does), when the inner one hands out
// plain pointers with one deleter (LibTorch's default does); whether it is.
bool count_cpu_tensors();

// The counting allocator's figures: bytes of CPU tensor storage allocated
// through it and not yet freed, and their peak since the last reset (both 0
// until count_cpu_tensors ran). Storage allocated before it ran
// counts in neither, and its frees are not subtracted.
struct CpuAllocated {
  bool counting = false;
  int64_t current_bytes = 0, peak_bytes = 0;
};
CpuAllocated cpu_allocated();
// The peak drops to what is allocated now.
void reset_cpu_allocated_peak();

}  // namespace ladder
