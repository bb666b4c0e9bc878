// bench/micro/matmul.cpp: the tf32 and bf16 rungs' mechanism, a matmul's
// precision, at the model's GEMM shapes.
//
// The forward GEMMs of one GPT-2 step on M = B*T tokens, x (M, K) @ w^T with
// w (N, K) as nn::Linear stores it: attn.c_attn (K=C, N=3C), attn.c_proj
// (C, C), mlp.c_fc (C, 4C), mlp.c_proj (4C, C) and lm_head (C, V). Each in
// fp32 (full precision), tf32 (float32 tensors under TF32 / oneDNN's reduced
// fp32 mode, variants/config/precision.h) and bf16 (bfloat16 tensors). Checked
// against a float64 matmul of the first rows, within the precision's tolerance.
#include <fmt/format.h>

#include "bench/micro/families.h"

namespace ladder::micro {
namespace {

struct Gemm {
  const char* name;
  int64_t n, k;  // w is (N, K)
};

std::vector<Gemm> gemms(const ModelConfig& m) {
  const int64_t C = m.n_embd;
  return {{"c_attn", 3 * C, C}, {"attn_c_proj", C, C}, {"c_fc", 4 * C, C}, {"mlp_c_proj", C, 4 * C},
          {"lm_head", m.vocab_size, C}};
}

void bench_matmul(benchmark::State& state, const std::string& name, const torch::Device& device,
                  Precision precision, int64_t M, const Gemm& g, uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto x32 = torch::randn({M, g.k}, gen).to(device);                                      // (M, K) float32
  auto w32 = (torch::randn({g.n, g.k}, gen) / std::sqrt(double(g.k))).to(device);        // (N, K) float32
  auto x = x32.to(dtype_for(precision));                                                   // (M, K)
  auto wt = w32.to(dtype_for(precision)).t();                                             // (K, N), a view
  auto out = torch::empty({M, g.n}, x.options());                                          // (M, N)
  MatmulPrecisionScope scope(device, precision);

  const CheckResult& check = check_once(name, [&] {
    torch::mm_out(out, x, wt);
    const int64_t rows = std::min<int64_t>(M, 64);
    auto want = torch::mm(x32.slice(0, 0, rows).to(torch::kFloat64), w32.to(torch::kFloat64).t());  // (rows, N)
    return compare_all({{out.slice(0, 0, rows), want}}, tolerance_for(precision),
                       fmt::format("{} matmul against float64 (first {} rows)", precision_name(precision), rows));
  });
  // What tf32 means on this device: TF32 tensor cores, oneDNN's bf16 "bf32" mode on CPU, or nothing.
  const std::string extra = precision == Precision::kTF32
                                ? (scope.effective() ? "tf32: " : "tf32 not effective: ") + scope.reason()
                                : "";
  if (!passed_check(state, check, extra)) return;
  const double s = time_iterations(state, device, [&] { torch::mm_out(out, x, wt); });
  set_flop_counters(state, double(matmul_flops(M, g.n, g.k)), s, device, precision);
}

void register_matmul(const MicroConfig& cfg) {
  for (const auto& device : cfg.devices) {
    const int64_t M = cfg.batch_for(device) * cfg.seq;
    for (Precision p : {Precision::kFP32, Precision::kTF32, Precision::kBF16}) {
      for (const Gemm& g : gemms(cfg.model)) {
        const std::string name = fmt::format("matmul/{}/{}/{}/M:{}/N:{}/K:{}", g.name, precision_name(p),
                                             device_tag(device), M, g.n, g.k);
        add_benchmark(name, [=](benchmark::State& st) { bench_matmul(st, name, device, p, M, g, cfg.seed); });
      }
    }
  }
}

}  // namespace

extern const Family matmul_family{"matmul", "tf32 / bf16: matmul precision at the model's GEMM shapes", register_matmul,
                                  nullptr, &switches::tf32};

}  // namespace ladder::micro
