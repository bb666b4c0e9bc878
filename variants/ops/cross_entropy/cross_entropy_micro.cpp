// variants/ops/cross_entropy/cross_entropy_micro.cpp: the vocab-pad rung's mechanism. The lm_head
// GEMM plus the cross-entropy, forward + backward, on M = B*T tokens, with the
// preset's vocabulary (50257 for GPT-2) against it padded to a multiple of 128
// (50304), as the step computes them at that rung (which has fused-ce on): the
// classifier as one node, logits = x @ wte^T and the cross-entropy over the
// first V columns only (fused::classifier_cross_entropy, variants/fused_linear/fused_linear.h),
// in fp32 and under bf16 autocast. The padded run must give the same loss, dx and dW[:V] as the
// unpadded one within the precision's tolerance, and exactly zero gradient
// on the padding rows.
#include <fmt/format.h>

#include "bench/micro/families.h"
#include "variants/fused_linear/fused_linear.h"
#include "variants/config/precision.h"

namespace ladder::micro {
namespace {

struct CrossEntropyInputs {
  torch::Tensor x;        // (M, C) float32, requires grad
  torch::Tensor w;        // (Vp, C) float32, requires grad; rows [V, Vp) are padding
  torch::Tensor targets;  // (M) int64 in [0, V)
};

// The first V rows of w and the targets are the same for every Vp.
CrossEntropyInputs make_inputs(const torch::Device& device, int64_t M, int64_t C, int64_t V, int64_t Vp,
                               uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  CrossEntropyInputs in;
  in.x = torch::randn({M, C}, gen).to(device).requires_grad_();
  in.targets = torch::randint(0, V, {M}, gen, torch::kInt64).to(device);
  auto w = torch::randn({V, C}, gen) * 0.02;                                 // (V, C)
  if (Vp > V) w = torch::cat({w, torch::randn({Vp - V, C}, gen) * 0.02});     // (Vp, C), padding drawn last
  in.w = w.to(device).requires_grad_();
  return in;
}

// Forward + backward as the step runs them; returns {loss, dx, dw}.
std::vector<torch::Tensor> run(const CrossEntropyInputs& in, int64_t V, Precision p, const torch::Device& device) {
  torch::Tensor loss;
  {
    AutocastScope autocast(p == Precision::kBF16, device);
    loss = fused::classifier_cross_entropy(in.x, in.w, in.targets, V);  // logits (M, Vp) inside
  }
  auto grads = torch::autograd::grad({loss}, {in.x, in.w});
  return {loss, grads[0], grads[1]};
}


void bench_ce(benchmark::State& state, const std::string& check_key, const torch::Device& device, Precision p,
              int64_t M, int64_t C, int64_t V, int64_t Vp, uint64_t seed) {
  const CrossEntropyInputs in = make_inputs(device, M, C, V, Vp, seed);
  const CheckResult& check = check_once(check_key, [&] {
    const int64_t Vpad = padded_vocab(V);
    const CrossEntropyInputs a = make_inputs(device, M, C, V, V, seed), b = make_inputs(device, M, C, V, Vpad, seed);
    auto want = run(a, V, p, device);
    auto got = run(b, V, p, device);
    auto pad_grad = got[2].slice(0, V);  // (Vpad - V, C): must be exactly zero
    return compare_all({{got[0], want[0]}, {got[1], want[1]}, {got[2].slice(0, 0, V), want[2]},
                        {pad_grad, torch::zeros_like(pad_grad)}},
                       tolerance_for(p),
                       fmt::format("V {} vs {} {}: loss, dx, dW[:V], dW[V:] == 0", Vpad, V, precision_name(p)));
  });
  if (!passed_check(state, check)) return;
  const double s = time_iterations(state, device, [&] { run(in, V, p, device); });
  // lm_head forward + backward: three GEMMs over the Vp columns actually computed.
  set_flop_counters(state, 3.0 * double(matmul_flops(M, Vp, C)), s, device, p);
}

void register_ce(const MicroConfig& cfg) {
  const int64_t V = cfg.model.vocab_size, C = cfg.model.n_embd;
  std::vector<int64_t> vocabs = {V};
  if (padded_vocab(V) != V) vocabs.push_back(padded_vocab(V));
  for (const auto& device : cfg.devices) {
    const int64_t M = cfg.batch_for(device) * cfg.seq;
    for (Precision p : {Precision::kFP32, Precision::kBF16}) {
      const std::string rest = fmt::format("{}/{}/M:{}/C:{}", precision_name(p), device_tag(device), M, C);
      for (int64_t Vp : vocabs) {
        const std::string name = fmt::format("cross_entropy/V:{}/{}", Vp, rest);
        add_benchmark(name, [=](benchmark::State& st) {
          bench_ce(st, "cross_entropy/check/" + rest, device, p, M, C, V, Vp, cfg.seed);
        });
      }
    }
  }
}

}  // namespace

extern const Family cross_entropy_family{"cross_entropy",
                                         "vocab-pad: lm_head GEMM + cross-entropy at V=50257 vs 50304", register_ce,
                                         nullptr, &switches::vocab_pad};

}  // namespace ladder::micro
