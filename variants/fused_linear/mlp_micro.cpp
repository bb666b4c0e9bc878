// variants/fused_linear/mlp_micro.cpp: the fused-linear switch's largest op, GPT-2's MLP at
// the residual stream's shape (B, T, C), forward + backward. Composite: what
// every rung without fused-linear runs, at::linear, tanh GELU, at::linear as
// separate autograd nodes (fused::mlp_gelu_reference); fused: the MLP as one
// node (fused::mlp_gelu, variants/fused_linear/fused_linear.h), as the fused rung runs it,
// with its cuBLASLt epilogues on CUDA (lt-epilogues, gelu-epilogue). Output
// and every gradient must agree within the precision's tolerance.
//
// flop_per_s counts the MLP's six GEMMs: 2 forward, 4 backward, each
// 2 * B*T * C * 4C.
#include <fmt/format.h>

#include "bench/micro/families.h"
#include "variants/fused_linear/fused_linear.h"
#include "variants/config/precision.h"

namespace ladder::micro {
namespace {

struct MlpInputs {
  torch::Tensor x, dy;          // (B, T, C); x requires grad
  torch::Tensor fc_w, fc_b;     // (4C, C), (4C); require grad
  torch::Tensor proj_w, proj_b; // (C, 4C), (C); require grad
};

// Forward + backward; returns {y, dx, dfc_w, dfc_b, dproj_w, dproj_b}.
std::vector<torch::Tensor> run(bool fused, const MlpInputs& in, Precision p, const torch::Device& device) {
  torch::Tensor y;
  {
    AutocastScope autocast(p == Precision::kBF16, device);
    y = fused ? fused::mlp_gelu(in.x, in.fc_w, in.fc_b, in.proj_w, in.proj_b)
              : fused::mlp_gelu_reference(in.x, in.fc_w, in.fc_b, in.proj_w, in.proj_b);  // (B, T, C)
  }
  auto g = torch::autograd::grad({y}, {in.x, in.fc_w, in.fc_b, in.proj_w, in.proj_b}, {in.dy.to(y.scalar_type())});
  return {y, g[0], g[1], g[2], g[3], g[4]};
}

void bench_mlp(benchmark::State& state, const std::string& check_key, const torch::Device& device, bool fused,
               Precision p, int64_t B, int64_t T, int64_t C, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto draw = [&](std::vector<int64_t> sizes, double scale) { return (torch::randn(sizes, gen) * scale).to(device); };
  MlpInputs in{draw({B, T, C}, 1.0).requires_grad_(), draw({B, T, C}, 1.0),
            draw({4 * C, C}, 0.02).requires_grad_(), draw({4 * C}, 0.02).requires_grad_(),
            draw({C, 4 * C}, 0.02).requires_grad_(), draw({C}, 0.02).requires_grad_()};
  const CheckResult& check = check_once(check_key, [&] {
    auto want = run(false, in, p, device), got = run(true, in, p, device);
    std::vector<std::pair<torch::Tensor, torch::Tensor>> pairs;
    for (size_t i = 0; i < got.size(); ++i) pairs.push_back({got[i], want[i]});
    return compare_all(pairs, tolerance_for(p),
                       fmt::format("mlp_gelu vs linear+gelu+linear {}: y, dx, dW_fc, db_fc, dW_proj, db_proj",
                                   precision_name(p)));
  });
  if (!passed_check(state, check)) return;
  const double s = time_iterations(state, device, [&] { run(fused, in, p, device); });
  set_flop_counters(state, 6.0 * double(matmul_flops(B * T, 4 * C, C)), s, device, p);
}

void register_mlp(const MicroConfig& cfg) {
  for (const auto& device : cfg.devices) {
    const int64_t B = cfg.batch_for(device), T = cfg.seq, C = cfg.model.n_embd;
    for (Precision p : {Precision::kFP32, Precision::kBF16}) {
      const std::string rest = fmt::format("{}/{}/B:{}/T:{}/C:{}", precision_name(p), device_tag(device), B, T, C);
      for (bool fused : {false, true}) {
        const std::string name = fmt::format("mlp/{}/{}", fused ? "fused" : "composite", rest);
        add_benchmark(name, [=](benchmark::State& st) {
          bench_mlp(st, "mlp/check/" + rest, device, fused, p, B, T, C, cfg.seed);
        });
      }
    }
  }
}

}  // namespace

extern const Family mlp_family{"mlp", "fused-linear: the MLP as linear+GELU+linear vs one fused::mlp_gelu node",
                               register_mlp, nullptr, &switches::fused_linear};

}  // namespace ladder::micro
