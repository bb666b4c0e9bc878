// variants/ops/attention/attention.cpp: see attention.h.
#include "variants/ops/attention/attention.h"

#include <cmath>
#include <limits>

#include <c10/core/DispatchKeySet.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

namespace ladder {

torch::Tensor explicit_causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                                        const torch::Tensor& v, const torch::Tensor& causal_mask) {
  const int64_t T = q.size(2), hs = q.size(3);
  auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(hs)));  // (B, nh, T, T)
  auto mask = causal_mask.slice(0, 0, T).slice(1, 0, T);                            // (T, T)
  att = att.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity());
  att = torch::softmax(att, -1);
  return torch::matmul(att, v);  // (B, nh, T, hs)
}

torch::Tensor sdpa_causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                                    const torch::Tensor& v) {
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);  // (B, nh, T, hs)
}

torch::Tensor causal_attention(AttentionCall call, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& causal_mask) {
  switch (call) {
    case AttentionCall::kSdpa: break;
    case AttentionCall::kExplicit:
      return fused_explicit_attention_runs(q, k, v) ? fused_explicit_causal_attention(q, k, v)
                                                    : explicit_causal_attention(q, k, v, causal_mask);
    case AttentionCall::kSdpaFp32: {
      if (q.scalar_type() == torch::kFloat) break;
      torch::Tensor y;
      {  // CPU autocast lists SDPA as a lower-precision op: it would cast the copies back to bf16
        c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
        y = sdpa_causal_attention(q.to(torch::kFloat), k.to(torch::kFloat), v.to(torch::kFloat));  // (B, nh, T, hs)
      }
      return y.to(q.scalar_type());
    }
  }
  return sdpa_causal_attention(q, k, v);  // (B, nh, T, hs)
}

}  // namespace ladder
