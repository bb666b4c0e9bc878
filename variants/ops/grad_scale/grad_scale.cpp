// variants/ops/grad_scale/grad_scale.cpp: see grad_scale.h.
#include "variants/ops/grad_scale/grad_scale.h"

#include <atomic>

#include <ATen/Parallel.h>

namespace ladder::fused {
namespace {

std::atomic<int64_t> g_calls{0};

// g *= scale over a contiguous float32 CPU tensor, in grains of 32 Ki elements.
void scale_cpu_float(torch::Tensor& g, float scale) {
  float* p = g.data_ptr<float>();
  at::parallel_for(0, g.numel(), 32 * 1024, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) p[i] *= scale;
  });
}

}  // namespace

void grad_scale_(const std::vector<torch::Tensor>& params, double scale) {
  ++g_calls;
  for (const auto& p : params) {
    torch::Tensor g = p.grad();
    if (!g.defined()) continue;
    if (g.device().is_cpu() && g.scalar_type() == torch::kFloat && g.is_contiguous()) {
      scale_cpu_float(g, float(scale));
    } else {
      g.mul_(scale);
    }
  }
}

std::vector<torch::Tensor> grad_scale_reference(const std::vector<torch::Tensor>& params, double scale) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params)
    if (p.grad().defined()) out.push_back(p.grad() * scale);
  return out;
}

int64_t grad_scale_calls() { return g_calls.load(); }

}  // namespace ladder::fused
