// bench/micro/layernorm.cpp: the fused rung's residual-add + LayerNorm, at
// the residual stream's shape (B, T, C), forward + backward. Composite: the
// add and at::layer_norm as two ATen ops (fused::add_layer_norm_reference);
// fused: ladder's one-pass op (fused::add_layer_norm, variants/add_layer_norm.h),
// which the fused rung uses between sub-blocks. s = x + r, y = LN(s) and the
// gradients of x, r, weight and bias must agree within the fp32 tolerance.
//
// bytes_per_s counts the least traffic, 9 float32 elements per element of x:
// read x and r and write s and y forward; read s, ds and dy and write dx and
// dr backward (weight and bias are C-sized and left out).
#include <fmt/format.h>

#include "bench/micro/families.h"
#include "variants/add_layer_norm.h"

namespace ladder::micro {
namespace {

struct Inputs {
  torch::Tensor x, r, ds, dy;  // (B, T, C) float32; x and r require grad
  torch::Tensor w, b;          // (C) float32, require grad
};

// Forward + backward; returns {s, y, dx, dr, dw, db}.
std::vector<torch::Tensor> run(bool fused, const Inputs& in) {
  auto [s, y] = fused ? fused::add_layer_norm(in.x, in.r, in.w, in.b)
                      : fused::add_layer_norm_reference(in.x, in.r, in.w, in.b);  // (B, T, C) each
  auto g = torch::autograd::grad({s, y}, {in.x, in.r, in.w, in.b}, {in.ds, in.dy});
  return {s, y, g[0], g[1], g[2], g[3]};
}

void bench_layernorm(benchmark::State& state, const std::string& check_key, const torch::Device& device,
                     bool fused, std::vector<int64_t> shape, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t C = shape.back();
  auto draw = [&](std::vector<int64_t> sizes) { return torch::randn(sizes, gen).to(device); };
  Inputs in{draw(shape).requires_grad_(), draw(shape).requires_grad_(), draw(shape), draw(shape),
            (1.0 + 0.1 * draw({C})).requires_grad_(), (0.1 * draw({C})).requires_grad_()};
  const CheckResult& check = check_once(check_key, [&] {
    auto want = run(false, in), got = run(true, in);
    std::vector<std::pair<torch::Tensor, torch::Tensor>> pairs;
    for (size_t i = 0; i < want.size(); ++i) pairs.emplace_back(got[i], want[i]);
    return compare_all(pairs, tolerance_for(Precision::kFP32),
                       "fused::add_layer_norm vs add + at::layer_norm: s, y, dx, dr, dw, db");
  });
  if (!passed_check(state, check)) return;
  time_iterations(state, device, [&] { run(fused, in); });
  set_byte_counters(state, 9.0 * double(in.x.numel()) * sizeof(float));
}

void register_layernorm(const MicroConfig& cfg) {
  for (const auto& device : cfg.devices) {
    const int64_t B = cfg.batch_for(device), T = cfg.seq, C = cfg.model.n_embd;
    const std::string rest = fmt::format("fp32/{}/B:{}/T:{}/C:{}", device_tag(device), B, T, C);
    for (bool fused : {false, true}) {
      const std::string name = fmt::format("layernorm/{}/{}", fused ? "fused" : "composite", rest);
      add_benchmark(name, [=](benchmark::State& st) {
        bench_layernorm(st, "layernorm/check/" + rest, device, fused, {B, T, C}, cfg.seed);
      });
    }
  }
}

}  // namespace

const Family kLayerNormFamily{"layernorm", "fused: residual add + LayerNorm, composite vs one pass",
                              register_layernorm, nullptr};

}  // namespace ladder::micro
