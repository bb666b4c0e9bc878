// bench/measure/device/device_cuda.h: thin CUDA adapter behind bench/measure/device/device.h.
// Only compiled with LADDER_WITH_CUDA. Every CUDA call is checked.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "bench/measure/device/device_types.h"
#include "reports/model/report/environment_section.h"  // DeviceDescription
#include "reports/model/report/noise_section.h"

namespace ladder::cuda {

void synchronize(int device_index);
std::unique_ptr<StepTimer> make_event_timer(int device_index);
void reset_memory_peaks(int device_index);
void release_cached_memory(int device_index);
void reset_peak_stats(int device_index);  // peaks only: no sync, no emptyCache
MemoryStats read_memory(int device_index);
// The device's memory, from its properties (creates no context).
int64_t total_memory(int device_index);
// The L2 cache's size, from the device's properties.
int64_t l2_cache_bytes(int device_index);
DeviceDescription describe(int device_index);
std::string name(int device_index);
// Clocks, temperature, power and throttle reasons now (NVML, gpu_state.cpp).
GpuSnapshot gpu_state(int device_index);

}  // namespace ladder::cuda
