// variants/ops/attention/attention_micro.cpp: the flash rung's mechanism. Explicit causal
// attention, masked softmax(q k^T / sqrt(hs)) v over the full (T, T) scores,
// against scaled_dot_product_attention(is_causal): the two cores the model
// switches between (variants/model/model.h), forward + backward, at the preset's
// heads and head size, for T = 128, 256, ... up to 2048 or twice the block
// size, whichever is smaller (at least 128: tiny runs T = 128 only). The two
// must agree on y, dq, dk and dv within the precision's tolerance. FLOPs are
// the causal triangle's (bench/measure/roofline/mfu.h, causal_attention_flops_per_token).
#include <fmt/format.h>

#include "bench/micro/families.h"
#include "variants/model/model.h"

namespace ladder::micro {
namespace {

enum class Kind { kExplicit, kSdpa };

struct AttentionInputs {
  torch::Tensor q, k, v, dy;  // (B, nh, T, hs)
  torch::Tensor mask;         // (T, T) bool, lower triangular
};

AttentionInputs make_inputs(const torch::Device& device, Precision p, int64_t B, int64_t H, int64_t T, int64_t hs,
                   uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto opts = torch::TensorOptions().dtype(dtype_for(p)).device(device);
  auto draw = [&] { return torch::randn({B, H, T, hs}, gen).to(opts); };  // (B, nh, T, hs)
  AttentionInputs in{draw().requires_grad_(), draw().requires_grad_(), draw().requires_grad_(), draw(), {}};
  in.mask = torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(device)).tril();
  return in;
}

// Forward + backward; returns {y, dq, dk, dv}.
std::vector<torch::Tensor> run(Kind kind, const AttentionInputs& in) {
  auto y = kind == Kind::kSdpa ? sdpa_causal_attention(in.q, in.k, in.v)
                               : explicit_causal_attention(in.q, in.k, in.v, in.mask);  // (B, nh, T, hs)
  auto grads = torch::autograd::grad({y}, {in.q, in.k, in.v}, {in.dy});
  return {y, grads[0], grads[1], grads[2]};
}

void bench_attention(benchmark::State& state, const std::string& check_key,
                     const torch::Device& device, Kind kind, Precision p, const ModelConfig& m, int64_t B,
                     int64_t T, uint64_t seed) {
  const int64_t H = m.n_head, hs = m.n_embd / m.n_head;
  const AttentionInputs in = make_inputs(device, p, B, H, T, hs, seed);
  const CheckResult& check = check_once(check_key, [&] {
    auto want = run(Kind::kExplicit, in);
    auto got = run(Kind::kSdpa, in);
    return compare_all({{got[0], want[0]}, {got[1], want[1]}, {got[2], want[2]}, {got[3], want[3]}},
                       tolerance_for(p), fmt::format("sdpa vs explicit {}: y, dq, dk, dv", precision_name(p)));
  });
  std::string extra;
  if (kind == Kind::kSdpa) {
    RunConfig rc;  // sdpa_backend asks LibTorch what it picks for these shapes
    rc.model = m;
    rc.batch = B;
    rc.seq = T;
    rc.sw.set(switches::bf16, p == Precision::kBF16);
    extra = "sdpa backend: " + sdpa_backend(rc, device);
  }
  if (!passed_check(state, check, extra)) return;
  const double s = time_iterations(state, device, [&] { run(kind, in); });
  // The work causal attention needs (the triangle), for either kind: explicit
  // computes the full (T, T) and masks half away.
  set_flop_counters(state, double(causal_attention_flops_per_token(H, hs, T) * B * T), s, device, p);
}

void register_attention(const MicroConfig& cfg) {
  const int64_t max_t = std::max<int64_t>(128, std::min<int64_t>(2048, 2 * cfg.model.block_size));
  for (const auto& device : cfg.devices) {
    const int64_t B = cfg.batch_for(device);
    for (Precision p : {Precision::kFP32, Precision::kBF16}) {
      for (int64_t T = 128; T <= max_t; T *= 2) {
        const std::string shape = fmt::format("{}/{}/B:{}/H:{}/T:{}/hs:{}", precision_name(p), device_tag(device), B,
                                              cfg.model.n_head, T, cfg.model.n_embd / cfg.model.n_head);
        for (Kind kind : {Kind::kExplicit, Kind::kSdpa}) {
          const std::string name = fmt::format("attention/{}/{}", kind == Kind::kSdpa ? "sdpa" : "explicit", shape);
          add_benchmark(name, [=](benchmark::State& st) {
            bench_attention(st, "attention/check/" + shape, device, kind, p, cfg.model, B, T, cfg.seed);
          });
        }
      }
    }
  }
}

}  // namespace

extern const Family attention_family{"attention", "flash: explicit softmax(QK^T)V vs scaled_dot_product_attention",
                                     register_attention, nullptr, &switches::flash};

}  // namespace ladder::micro
