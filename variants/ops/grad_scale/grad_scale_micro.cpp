// variants/ops/grad_scale/grad_scale_micro.cpp: fused::grad_scale_ against
// ATen's mul_ of every gradient, over the preset's GPT-2 parameter list in
// fp32. The fused way's gradients must equal the reference's first.
// bytes_per_s counts one read and one write of every gradient.
#include <fmt/format.h>

#include "bench/micro/families.h"
#include "variants/ops/grad_scale/grad_scale.h"

namespace ladder::micro {
namespace {

// Parameters of the preset's shapes on `device`, each with a gradient.
std::vector<torch::Tensor> params_on(const torch::Device& device, const ModelConfig& model, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<torch::Tensor> params;
  for (const auto& shape : gpt_parameter_shapes(model)) {
    auto p = torch::zeros(shape.sizes(), torch::TensorOptions(device).requires_grad(true));
    p.mutable_grad() = torch::randn(shape.sizes(), gen).to(device);
    params.push_back(p);
  }
  return params;
}

void bench_grad_scale(benchmark::State& state, const std::string& check_key, const torch::Device& device, bool fused,
                      const ModelConfig& model, uint64_t seed) {
  auto params = params_on(device, model, seed);
  const CheckResult& check = check_once(check_key, [&] {
    const auto want = fused::grad_scale_reference(params, 0.5);
    auto copy = params_on(device, model, seed);
    fused::grad_scale_(copy, 0.5);
    std::vector<std::pair<torch::Tensor, torch::Tensor>> pairs;
    for (size_t i = 0; i < want.size(); ++i) pairs.emplace_back(copy[i].grad(), want[i]);
    return compare_all(pairs, tolerance_for(Precision::kFP32), "fused::grad_scale_ vs mul_: every gradient");
  });
  if (!passed_check(state, check)) return;
  time_iterations(state, device, [&] {
    if (fused) {
      fused::grad_scale_(params, 1.0);
    } else {
      for (auto& p : params) p.grad().mul_(1.0);
    }
  });
  double bytes = 0;
  for (const auto& p : params) bytes += 8.0 * double(p.numel());
  set_byte_counters(state, bytes);
}

void register_grad_scale(const MicroConfig& cfg) {
  for (const auto& device : cfg.devices) {
    const std::string rest = fmt::format("fp32/{}", device_tag(device));
    for (bool fused : {false, true}) {
      add_benchmark(fmt::format("grad_scale/{}/{}", fused ? "fused" : "mul", rest), [=](benchmark::State& st) {
        bench_grad_scale(st, "grad_scale/check/" + rest, device, fused, cfg.model, cfg.seed);
      });
    }
  }
}

}  // namespace

extern const Family grad_scale_family{"grad_scale", "grad-scale: every gradient times a constant, mul_ vs one pass",
                                      register_grad_scale, nullptr, &switches::grad_scale};

}  // namespace ladder::micro
