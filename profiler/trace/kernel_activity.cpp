// profiler/trace/kernel_activity.cpp: the collector of builds without CUPTI (see
// kernel_activity.h; with LADDER_WITH_CUPTI, profiler/cuda/cupti_activity.cpp
// provides start_kernel_activity instead).
#include "profiler/trace/kernel_activity.h"

namespace ladder::profiler {

#ifndef LADDER_WITH_CUPTI
std::unique_ptr<KernelActivity> start_kernel_activity() {
  throw KernelActivityUnavailable(
      "this build has no CUPTI (configured without CUDA or CUPTI): kernel activity unavailable");
}
#endif

}  // namespace ladder::profiler
