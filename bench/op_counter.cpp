// bench/op_counter.cpp: see op_counter.h.
#include "bench/op_counter.h"

#include <cstdlib>

#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/profiler_kineto.h>

#include "bench/device.h"

namespace ladder {

OpCounts count_ops(const torch::Device& device, const std::function<void()>& fn) {
  namespace prof = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  const prof::ProfilerConfig config(prof::ProfilerState::KINETO, /*report_input_shapes=*/false,
                                    /*profile_memory=*/false);
  // On CPU-only runs Kineto's probe for GPUs logs a spurious error; a user's
  // own KINETO_LOG_LEVEL still wins.
  if (!device.is_cuda()) setenv("KINETO_LOG_LEVEL", "5", /*overwrite=*/0);
  std::set<ActivityType> activities{ActivityType::CPU};
  if (device.is_cuda()) activities.insert(ActivityType::CUDA);
  prof::prepareProfiler(config, activities);
  prof::enableProfiler(config, activities);
  fn();
  synchronize(device);
  const auto result = prof::disableProfiler();
  OpCounts c;
  for (const auto& ev : result->events()) {
    const std::string name = ev.name();
    if (ev.deviceType() == c10::DeviceType::CPU) {
      if (name.rfind("aten::", 0) == 0) ++c.cpu_ops;
    } else if (ev.deviceType() == c10::DeviceType::CUDA) {
      const bool copy = name.find("Memcpy") != std::string::npos || name.find("Memset") != std::string::npos;
      ++(copy ? c.cuda_memcpy_set : c.cuda_kernels);
    }
  }
  return c;
}

void to_json(nlohmann::json& j, const OpCounts& c) {
  j = {{"cpu_ops_per_step", c.cpu_ops},
       {"cuda_kernels_per_step", c.cuda_kernels},
       {"cuda_memcpy_memset_per_step", c.cuda_memcpy_set},
       {"source", c.source}};
}

}  // namespace ladder
