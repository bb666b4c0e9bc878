// bench/op_counter.h: operator dispatches and kernel launches in one step,
// counted from LibTorch's Kineto profiler. This is how the fused rung's effect
// is shown beside its time: fewer aten:: ops on CPU, fewer kernels on CUDA.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json_fwd.hpp>
#include <torch/torch.h>

namespace ladder {

struct OpCounts {
  int64_t cpu_ops = 0;          // aten:: operator dispatches on the host
  int64_t cuda_kernels = 0;     // kernel launches on the device (0 on CPU)
  int64_t cuda_memcpy_set = 0;  // memcpy and memset activities
  std::string source = "kineto";
};

// Runs `fn` (one training step) under the profiler and counts its events.
OpCounts count_ops(const torch::Device& device, const std::function<void()>& fn);

void to_json(nlohmann::json& j, const OpCounts& c);

}  // namespace ladder
