// variants/fused_ops.h: the two fused operators of the "fused" rung, each
// beside the composite-ATen reference it must match (tests/test_fused_ops.cpp).
//
//  - add_layer_norm: the residual add and the following LayerNorm in one pass
//    per row: s = x + residual; y = LayerNorm(s) * weight + bias. An autograd
//    Function.
//  - cross_entropy_loss_and_grad_over_logits: the loss half of the classifier
//    (classifier_cross_entropy, variants/fused_linear.h): mean cross-entropy
//    over the first valid_vocab columns of padded logits (llm.c semantics)
//    and, in the same pass, grad = (softmax - onehot) / N over the logits.
//
// On CPU they run fused C++ loops (one task per row, float accumulation); on
// CUDA the kernels of variants/cuda/fused_kernels.cu on the current stream,
// without host synchronisation (CUDA-graph safe).
#pragma once

#include <cstdint>
#include <tuple>

#include <torch/torch.h>

namespace ladder::fused {

// s = x + residual; y = LayerNorm(s) * weight + bias over the last dim (eps).
// x: (..., C) float32 (the residual stream); residual: (..., C) float32 or
// bfloat16 (e.g. a bf16 linear output under autocast; it is added in fp32);
// weight, bias: (C) float32. Returns {s, y}: s (..., C) float32, y (..., C)
// in y_dtype, float32 or bfloat16. All arithmetic is in fp32; a bf16 y is
// rounded once on the way out, so that under bf16 autocast the next linear
// reads it without a cast kernel, and its gradient comes back in bf16 without
// one either (the backward reads dy in y's dtype).
// Differentiable w.r.t. x, residual, weight and bias.
std::tuple<torch::Tensor, torch::Tensor> add_layer_norm(const torch::Tensor& x, const torch::Tensor& residual,
                                                        const torch::Tensor& weight, const torch::Tensor& bias,
                                                        double eps = 1e-5, at::ScalarType y_dtype = at::kFloat);
// Composite ATen ops: s = x + residual.to(x.dtype());
// y = at::layer_norm(s, {C}, weight, bias, eps).to(y_dtype).
std::tuple<torch::Tensor, torch::Tensor> add_layer_norm_reference(const torch::Tensor& x,
                                                                  const torch::Tensor& residual,
                                                                  const torch::Tensor& weight,
                                                                  const torch::Tensor& bias, double eps = 1e-5,
                                                                  at::ScalarType y_dtype = at::kFloat);

// Not differentiable: the forward half of the classifier's one-pass loss
// (classifier_cross_entropy, variants/fused_linear.h). Returns the mean
// cross-entropy, a () float32 computed in fp32, of logits (N, Vp) against
// targets (N) int64, where only the first valid_vocab columns are classes:
// the padding columns [valid_vocab, Vp) never enter the softmax. In the same
// pass over each row it writes d(loss)/d(logits) = (softmax - onehot) / N
// over the logits themselves, in their dtype (float32 or bfloat16), exactly 0
// on the padding columns. logits and targets must be contiguous; targets must
// lie in [0, valid_vocab). On CUDA the targets are not range-checked (that
// would synchronise): a row with a bad target makes the loss NaN instead of
// throwing.
torch::Tensor cross_entropy_loss_and_grad_over_logits(const torch::Tensor& logits, const torch::Tensor& targets,
                                                      int64_t valid_vocab);
// at::cross_entropy_loss (mean) on logits.narrow(1, 0, valid_vocab).float();
// its gradient w.r.t. the logits is what the op above writes.
torch::Tensor cross_entropy_reference(const torch::Tensor& logits, const torch::Tensor& targets,
                                      int64_t valid_vocab);

// How many times add_layer_norm's forward ran in this process (a CUDA-graph
// replay runs none: it replays the captured kernels). The fused-ln switch is
// effective only if it ran (variants/switches/fused_ln.cpp).
int64_t add_layer_norm_calls();

namespace detail {
// The autograd Function behind add_layer_norm; declared here so that tests
// can inspect what it saves for backward.
struct AddLayerNormFunction : public torch::autograd::Function<AddLayerNormFunction> {
  // Returns {s, y}; saves s, weight, mean (N), rstd (N).
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                                const torch::Tensor& residual, const torch::Tensor& weight,
                                                const torch::Tensor& bias, double eps, at::ScalarType y_dtype);
  // Returns {dx, dresidual, dweight, dbias, none, none}.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs);
};
}  // namespace detail

}  // namespace ladder::fused
