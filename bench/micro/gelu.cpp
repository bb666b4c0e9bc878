// bench/micro/gelu.cpp: what elementwise fusion buys, on GPT-2's tanh GELU
// at the MLP's activation shape (B, T, 4C), forward + backward. Composite:
// the tanh formula as separate ATen ops,
//   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// each reading and writing the whole tensor (what eager PyTorch would run
// without the fused kernel); fused: at::gelu(x, "tanh"), one kernel each way,
// which the model uses. Output and gradient must agree within the
// precision's tolerance.
//
// bytes_per_s counts the least traffic: read x and write y forward, read x
// and dy and write dx backward, 5 elements per element of x.
#include <cmath>

#include <fmt/format.h>

#include "bench/micro/families.h"

namespace ladder::micro {
namespace {

torch::Tensor gelu_composite(const torch::Tensor& x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + torch::tanh(k * (x + 0.044715 * torch::pow(x, 3))));
}

// Forward + backward; returns {y, dx}.
std::vector<torch::Tensor> run(bool fused, const torch::Tensor& x, const torch::Tensor& dy) {
  auto y = fused ? at::gelu(x, "tanh") : gelu_composite(x);
  return {y, torch::autograd::grad({y}, {x}, {dy})[0]};
}

void bench_gelu(benchmark::State& state, const std::string& check_key, const torch::Device& device, bool fused,
                Precision p, std::vector<int64_t> shape, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto opts = torch::TensorOptions().dtype(dtype_for(p)).device(device);
  auto x = torch::randn(shape, gen).to(opts).requires_grad_();  // (B, T, 4C)
  auto dy = torch::randn(shape, gen).to(opts);                   // (B, T, 4C)
  const CheckResult& check = check_once(check_key, [&] {
    auto want = run(false, x, dy), got = run(true, x, dy);
    return compare_all({{got[0], want[0]}, {got[1], want[1]}}, tolerance_for(p),
                       fmt::format("at::gelu(tanh) vs composite {}: y, dx", precision_tag(p)));
  });
  if (!passed_check(state, check)) return;
  time_iterations(state, device, [&] { run(fused, x, dy); });
  set_byte_counters(state, 5.0 * double(x.numel()) * double(x.element_size()));
}

void register_gelu(const MicroConfig& cfg) {
  for (const auto& device : cfg.devices) {
    const int64_t B = cfg.batch_for(device), T = cfg.seq, C4 = 4 * cfg.model.n_embd;
    for (Precision p : {Precision::kFP32, Precision::kBF16}) {
      const std::string rest = fmt::format("{}/{}/B:{}/T:{}/C:{}", precision_tag(p), device_tag(device), B, T, C4);
      for (bool fused : {false, true}) {
        const std::string name = fmt::format("gelu/{}/{}", fused ? "fused" : "composite", rest);
        add_benchmark(name, [=](benchmark::State& st) {
          bench_gelu(st, "gelu/check/" + rest, device, fused, p, {B, T, C4}, cfg.seed);
        });
      }
    }
  }
}

}  // namespace

const Family kGeluFamily{"gelu", "fused: tanh GELU as composite ATen ops vs at::gelu", register_gelu, nullptr};

}  // namespace ladder::micro
