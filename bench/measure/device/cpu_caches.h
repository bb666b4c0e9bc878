// bench/measure/device/cpu_caches.h: the CPU's caches as sysfs describes cpu0's
// (/sys/devices/system/cpu/cpu0/cache/index*/), and the one-line reader of
// /sys and /proc files it uses. The environment (environment.h) reports them;
// the device layer (device.h) takes the last-level cache's size from them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ladder {

// The first line of a file, or "" when it cannot be read.
std::string read_first_line(const std::string& path);

struct CpuCache {
  std::string type;   // "Data", "Instruction", "Unified"
  int level = 0;
  int64_t size_bytes = 0;
  int num_sharing = 0;  // CPUs that share it
};

// cpu0's caches in sysfs order; a cache whose size or sharing cannot be read
// is left out, never guessed. Empty where sysfs has none (a container without it).
std::vector<CpuCache> cpu0_caches();

}  // namespace ladder
