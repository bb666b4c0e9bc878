// bench/roofline.cpp: see roofline.h.
#include "bench/roofline.h"

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "bench/device.h"

namespace ladder {

RooflineResult probe_matmul(const torch::Device& device, Precision precision, int64_t n,
                            double min_seconds) {
  torch::NoGradGuard no_grad;
  RooflineResult r;
  r.n = n > 0 ? n : (device.is_cuda() ? 8192 : 1024);
  const auto dtype = precision == Precision::kBF16 ? torch::kBFloat16 : torch::kFloat32;
  r.dtype = precision == Precision::kBF16 ? "bfloat16" : "float32";
  auto opts = torch::TensorOptions().dtype(dtype).device(device);
  auto a = torch::randn({r.n, r.n}, opts);  // (n, n)
  auto b = torch::randn({r.n, r.n}, opts);  // (n, n)
  auto c = torch::empty({r.n, r.n}, opts);  // (n, n)
  torch::mm_out(c, a, b);                   // warm up kernels and caches
  synchronize(device);
  const double flops = 2.0 * double(r.n) * double(r.n) * double(r.n);
  auto timer = make_step_timer(device);
  const auto wall0 = std::chrono::steady_clock::now();
  double best_ms = 1e300;
  while (true) {
    timer->start();
    torch::mm_out(c, a, b);
    timer->stop();
    best_ms = std::min(best_ms, timer->elapsed_ms());
    ++r.reps;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    if ((wall >= min_seconds && r.reps >= 3) || r.reps >= 200) {
      r.probe_ms = wall * 1e3;
      break;
    }
  }
  r.tflops = flops / (best_ms * 1e-3) / 1e12;
  return r;
}

void to_json(nlohmann::json& j, const RooflineResult& r) {
  j = {{"matmul_tflops", r.tflops}, {"n", r.n}, {"reps", r.reps}, {"dtype", r.dtype},
       {"probe_ms", r.probe_ms}, {"statistic", "best of reps"}};
}

}  // namespace ladder
