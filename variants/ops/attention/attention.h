// variants/ops/attention/attention.h: the causal attention the rungs run. The model
// (variants/model/model.h) calls it, and so do the attention planner's candidates
// (variants/planners/attention_candidates.h) and the micro-benchmarks
// (variants/ops/attention/attention_micro.cpp), so each times exactly what a step runs.
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace ladder {

// The two attention cores the flash rung switches between; q, k, v:
// (B, nh, T, hs) -> (B, nh, T, hs). The explicit one is nanoGPT's slow path:
// masked softmax(q k^T / sqrt(hs)) v over the full (B, nh, T, T) score matrix;
// causal_mask is (>= T, >= T) bool, true where attention is allowed. The SDPA
// one is scaled_dot_product_attention(is_causal), whose backend (flash,
// memory-efficient, cuDNN, math) the SDP switches and LibTorch pick.
torch::Tensor explicit_causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                                        const torch::Tensor& v, const torch::Tensor& causal_mask);
torch::Tensor sdpa_causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                                    const torch::Tensor& v);

// The explicit attention above as one autograd node, on a CPU
// (variants/ops/attention/attention_cpu.cpp): q k^T and p v as batched matmuls in the
// inputs' dtype, the causal softmax over each row's first i + 1 scores in one
// pass (in float, p stored in the inputs' dtype), and its backward written out
// (four batched matmuls and one pass per row). Same results as the composite
// within the dtype's rounding. Takes (B, nh, T, hs) CPU tensors of one shape,
// all float32 or all bfloat16 (fused_explicit_attention_runs); throws
// otherwise.
bool fused_explicit_attention_runs(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);
torch::Tensor fused_explicit_causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                                              const torch::Tensor& v);

// How the flash rung calls its attention, as its attention plan chose
// (variants/planners/attention_plan.h): SDPA, with the SDP switches as the plan set
// them; SDPA on fp32 copies of q, k, v with its output cast back to q's dtype
// (autocast kept from casting them back down; on fp32 inputs, SDPA itself);
// or the explicit attention above: one node on a CPU where it runs
// (fused_explicit_causal_attention), else the composite. The planner's
// candidates and the model call it alike.
enum class AttentionCall : uint8_t { kSdpa, kSdpaFp32, kExplicit };
torch::Tensor causal_attention(AttentionCall call, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& causal_mask);

}  // namespace ladder
