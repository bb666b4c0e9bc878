// bench/roofline.h: a short matmul probe that measures the device's real
// dense-matmul ceiling at the step's precision. MFU against it is the figure
// that means something on CPUs, where no datasheet peak exists.
#pragma once

#include <cstdint>

#include <nlohmann/json_fwd.hpp>
#include <torch/torch.h>

#include "bench/mfu.h"

namespace ladder {

struct RooflineResult {
  double tflops = 0;  // best of the repetitions
  int64_t n = 0;      // square matmul size n x n x n
  int reps = 0;
  double probe_ms = 0;  // wall time the probe took
  std::string dtype;
};

// Times (n x n) @ (n x n) matmuls until ~min_seconds have passed. n defaults
// to 1024 on CPU and 8192 on CUDA. tf32 uses float32 tensors under whatever
// matmul precision is currently set.
RooflineResult probe_matmul(const torch::Device& device, Precision precision, int64_t n = 0,
                            double min_seconds = 0.3);

void to_json(nlohmann::json& j, const RooflineResult& r);

}  // namespace ladder
