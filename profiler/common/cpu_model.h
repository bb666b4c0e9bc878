// profiler/common/cpu_model.h: the host CPU's model name, read in one place
// (a report's device, a CPU GEMM plan's key).
#pragma once

#include <string>

namespace ladder {

// /proc/cpuinfo's first "model name" ("Intel(R) Xeon(R) Processor"), or
// "unknown CPU" where there is none.
std::string cpu_model_name();

}  // namespace ladder
