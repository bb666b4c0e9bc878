// bench/measure/device/device.h: the device seen by the harness, the same on CPU and CUDA.
//
// Parsing and availability, synchronisation, a step timer (a steady clock on
// CPU, CUDA events on GPU) and the best-of-repetitions loop the ceilings use,
// memory statistics, the last-level cache and a description for reports.
// The CUDA side lives in bench/measure/device/cuda/device_cuda.cpp, compiled only when
// LADDER_WITH_CUDA is defined; everything here has a CPU path.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>
#include <torch/torch.h>

#include "bench/measure/device/device_types.h"
#include "reports/model/report/environment_section.h"  // DeviceDescription
#include "reports/model/report/noise_section.h"

namespace ladder {

// "cpu", "cuda", "cuda:N". Throws ConfigError for malformed specs and for
// CUDA on a machine where LibTorch sees no CUDA device.
torch::Device parse_device(const std::string& spec);
bool cuda_available();
std::string default_device_spec();  // "cuda" when available, else "cpu"

void synchronize(const torch::Device& device);

std::unique_ptr<StepTimer> make_step_timer(const torch::Device& device);

// The fastest of repeated calls of `op`, each timed alone by `timer`: what a
// ceiling (roofline.h, bandwidth.h) keeps. It runs `op` at least `min_reps`
// times and for at least `min_seconds` of wall time, at most `max_reps`
// times. No call is dropped as a warm-up, and with min_reps >= 2 a cold first
// call is never the only one timed.
struct BestTime {
  double best_ms = 0;
  int reps = 0;
  double wall_ms = 0;  // every call, timed or not by the timer
};
BestTime best_time(StepTimer& timer, const std::function<void()>& op, int min_reps, double min_seconds,
                   int max_reps);

// Empties the CUDA caching allocator's cache (before the warmup steps, so
// that they, not the first measured step, pay for cudaMalloc).
void release_cached_memory(const torch::Device& device);
// Resets peaks and accumulated counters at the start of measurement, keeping
// the cache. Returns whether the CPU peak-RSS reset took effect.
bool reset_memory_peaks(const torch::Device& device);
// Resets only the peaks (CUDA allocator peaks, the host's VmHWM), keeping the
// cache and the accumulated counters: between two steps. Returns whether the
// peak-RSS reset took effect.
bool reset_peak_memory(const torch::Device& device);
MemoryStats read_memory(const torch::Device& device);
// GPU memory, or physical RAM on CPU, without touching the CUDA allocator or
// creating a context (the runner asks before its children start).
int64_t device_memory_bytes(const torch::Device& device);
// The last-level cache: a CPU's largest cache level (cpu0's, sysfs), a GPU's
// L2; 0 where it cannot be read.
int64_t last_level_cache_bytes(const torch::Device& device);

// Name, count, memory, driver and library versions for the report.
DeviceDescription describe_device(const torch::Device& device);
// What may slow a GPU down, now: its SM clock (MHz), temperature (C), power
// (W) and throttle reasons, from NVML; its `unavailable` says why where NVML
// is not there; none on a CPU.
std::optional<GpuSnapshot> gpu_state(const torch::Device& device);
// "NVIDIA H100 80GB HBM3", or the CPU model on CPU.
std::string device_name(const torch::Device& device);

}  // namespace ladder
