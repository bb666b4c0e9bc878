// variants/ops/attention/attention_cpu.cpp: the explicit causal attention as one autograd
// node on a CPU (fused_explicit_causal_attention, attention.h): two batched
// matmuls in the inputs' dtype around a causal softmax done in one pass per
// row, and a backward written out (four batched matmuls around the softmax's
// backward, one pass per row). The composite it replaces
// (explicit_causal_attention) runs masked_fill, softmax, autocast's casts and
// autograd's where/mul nodes over the (B, nh, T, T) scores one op at a time.
#include "variants/ops/attention/attention.h"

#include <cmath>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "variants/ops/cpu_rows.h"

namespace ladder {

namespace {

using namespace fused::cpu_rows;  // the row helpers, unqualified in the loops below
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows [begin, end) of the (B*nh*T, T) scores s, in place: row r is query
// position i = r % T, and becomes softmax(s[0..i] * scale), 0 past i. One exp
// per score: the row's exp((s - max) * scale) wait in float in `e` (T floats)
// for the pass that scales them by 1 / sum.
template <typename E>
LADDER_CPU_CLONES void causal_softmax_rows(int64_t begin, int64_t end, E* s, int64_t T, float scale) {
  std::vector<float> e(size_t(T), 0.f);
  float* __restrict__ ev = e.data();
  for (int64_t r = begin; r < end; ++r) {
    E* __restrict__ x = s + r * T;
    const int64_t n = r % T + 1;  // positions 0..i
    const float m = max_over(n, [&](int64_t j) { return to_float(x[j]); });
    const float sum = lane_sum(n, [&](int64_t j) { return ev[j] = exp_approx((to_float(x[j]) - m) * scale); });
    const float inv = 1.f / sum;
    for (int64_t j = 0; j < n; ++j) x[j] = from_float<E>(ev[j] * inv);
    for (int64_t j = n; j < T; ++j) x[j] = from_float<E>(0.f);
  }
}

// Rows [begin, end) of the softmax's backward, in place over dp: with p the
// softmax's output, ds[j] = p[j] (dp[j] - sum_k p[k] dp[k]) * scale over
// 0..i, and 0 past i (where p is 0).
template <typename E>
LADDER_CPU_CLONES void causal_softmax_backward_rows(int64_t begin, int64_t end, const E* p, E* dp, int64_t T,
                                                    float scale) {
  for (int64_t r = begin; r < end; ++r) {
    const E* pr = p + r * T;
    E* d = dp + r * T;
    const int64_t n = r % T + 1;
    const float dot = lane_sum(n, [&](int64_t j) { return to_float(pr[j]) * to_float(d[j]); });
    for (int64_t j = 0; j < n; ++j) d[j] = from_float<E>(to_float(pr[j]) * (to_float(d[j]) - dot) * scale);
    for (int64_t j = n; j < T; ++j) d[j] = from_float<E>(0.f);
  }
}

// Rows of a (B, nh, T, T) contiguous tensor, split over the intra-op threads.
template <typename F>
void over_score_rows(const torch::Tensor& scores, F&& rows) {
  const int64_t T = scores.size(-1), R = scores.numel() / T;
  with_cpu_elem(scores.scalar_type(), [&](auto elem) {
    using E = decltype(elem);
    at::parallel_for(0, R, /*grain_size=*/std::max<int64_t>(1, 4096 / T),
                     [&](int64_t begin, int64_t end) { rows(begin, end, E{}); });
  });
}

struct ExplicitAttentionFunction : public torch::autograd::Function<ExplicitAttentionFunction> {
  // q, k, v arrive as views of the (B, T, 3C) projection, whose (B, nh) cannot
  // merge into one batch dimension: each is copied once here and saved so,
  // where at::matmul would copy it for each of its products.
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& q_view, const torch::Tensor& k_view,
                               const torch::Tensor& v_view) {
    const auto q = q_view.contiguous(), k = k_view.contiguous(), v = v_view.contiguous();  // (B, nh, T, hs)
    const int64_t T = q.size(2);
    const float scale = float(1.0 / std::sqrt(double(q.size(3))));
    auto p = at::matmul(q, k.transpose(-2, -1)).contiguous();  // (B, nh, T, T) scores, then probabilities
    over_score_rows(p, [&](int64_t begin, int64_t end, auto elem) {
      causal_softmax_rows(begin, end, cpu_data<decltype(elem)>(p), T, scale);
    });
    auto y = at::matmul(p, v);  // (B, nh, T, hs)
    ctx->save_for_backward({q, k, v, p});
    return {y};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &p = saved[3];
    const auto dy = grad_outputs[0].to(q.scalar_type()).contiguous();  // (B, nh, T, hs), copied once
    const int64_t T = q.size(2);
    const float scale = float(1.0 / std::sqrt(double(q.size(3))));
    auto dv = at::matmul(p.transpose(-2, -1), dy);                   // (B, nh, T, hs)
    auto ds = at::matmul(dy, v.transpose(-2, -1)).contiguous();      // (B, nh, T, T): dp, then ds
    over_score_rows(ds, [&](int64_t begin, int64_t end, auto elem) {
      using E = decltype(elem);
      causal_softmax_backward_rows(begin, end, cpu_data<E>(p), cpu_data<E>(ds), T, scale);
    });
    auto dq = at::matmul(ds, k);                   // (B, nh, T, hs)
    auto dk = at::matmul(ds.transpose(-2, -1), q);  // (B, nh, T, hs)
    return {dq, dk, dv};
  }
};

}  // namespace

bool fused_explicit_attention_runs(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  const auto dt = q.scalar_type();
  return q.is_cpu() && (dt == torch::kFloat || dt == torch::kBFloat16) && k.scalar_type() == dt &&
         v.scalar_type() == dt && q.dim() == 4 && k.sizes() == q.sizes() && v.sizes() == q.sizes();
}

torch::Tensor fused_explicit_causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                                              const torch::Tensor& v) {
  RECORD_FUNCTION("ladder::explicit_causal_attention", std::vector<c10::IValue>({q, k, v}));
  TORCH_CHECK(fused_explicit_attention_runs(q, k, v), "fused_explicit_causal_attention: q ", q.sizes(), " ",
              q.scalar_type(), " on ", q.device(), ", k ", k.sizes(), " ", k.scalar_type(), ", v ", v.sizes(), " ",
              v.scalar_type(), "; expected (B, nh, T, hs) CPU tensors of one shape, all float32 or all bfloat16");
  // The matmuls run in the inputs' dtype, as the composite's do under autocast.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  return ExplicitAttentionFunction::apply(q, k, v)[0];
}

}  // namespace ladder
