// bench/measure/device/environment.h: where a report was measured (host, OS, CPU, threads,
// device, library versions, compiler). Compare refuses or explains from this.
#pragma once

#include <string>

#include <torch/torch.h>

#include "reports/model/report/environment_section.h"

namespace ladder {

EnvironmentSection describe_environment(const torch::Device& device);
std::string host_name();
// The host CPU facts google/benchmark's context has, as far as /proc and /sys
// tell them here: mhz_per_cpu (/proc/cpuinfo), caches (cpu0's, from sysfs:
// type, level, size in bytes, num_sharing), load_avg (/proc/loadavg) and
// cpu_scaling_enabled (cpufreq governor other than "performance"). A fact
// that could not be read is absent, never guessed.
CpuHost describe_cpu_host();

}  // namespace ladder
