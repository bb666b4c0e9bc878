// variants/fused_linear/fused_linear.h: the fused rung's matmuls, with the elementwise work
// that follows or precedes each GEMM moved into the GEMM's epilogue.
//
//  - linear_bias: y = x W^T + b. Forward adds the bias in the GEMM epilogue
//    (cuBLASLt BIAS); backward computes dW and db in one GEMM (BGRADB: the bias
//    gradient is the reduction of dy that the dW GEMM reads anyway), dx in another.
//  - mlp_gelu: GPT-2's MLP as one op, y = gelu_tanh(x Wfc^T + bfc) Wproj^T + bproj.
//    Forward: the first GEMM's epilogue adds bfc, applies GELU and keeps the
//    pre-activation for backward (GELU_AUX_BIAS). Backward: the GEMM that
//    computes d(gelu output) = dy Wproj applies GELU's derivative to it in its
//    epilogue (DGELU); each weight gradient GEMM, c_fc's too, also yields its
//    bias gradient (BGRADB: c_fc's is the sum of that dpre). Without these, the
//    MLP's forward and backward each pay a separate GELU pass over (N, 4C)
//    and a bias reduction per linear (variants/ops/add_layer_norm/add_layer_norm.h and
//    variants/ops/cross_entropy/cross_entropy.h have the other fused ops).
//
// Both are autograd Functions, so autograd stays in charge of the graph. Under
// autocast the inputs are cast to the autocast dtype first (as autocast would
// cast a linear), and the op runs in that dtype with fp32 accumulation.
//
// CUDA: each epilogue GEMM runs as the step's GEMM plan chose for its site
// (variants/planners/gemm_plan.h, variants/planners/gemm_candidates.h): PyTorch's own ops, or
// cuBLASLt (variants/cuda/cublaslt_matmul.h) with the epilogue, without the
// bias-gradient reduction, or accumulating into the flat gradient buffer.
// When cuBLASLt offers no algorithm for a choice at some shape and dtype, that
// GEMM falls back to a plain GEMM plus ATen elementwise ops (same maths) and
// the fallback is counted with its reason (fused_linear_stats(); the report's
// fused switch).
// CPU: the same steps as ATen calls (addmm, gelu, gelu_backward, sum); there
// the gain is one autograd node per MLP, not fewer passes, and what the plan
// measured faster: weight gradients added into the flat buffer by addmm_ (F).
// References (variants/fused_linear/test_fused_linear.cpp): at::linear and at::gelu composites.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "variants/ops/cast_cache.h"
#include "variants/planners/gemm_plan.h"

namespace ladder::fused {

// Parameter gradients (every op below): with grads_into_buffers set and a
// parameter's .grad()
// already a tensor (the training step's flat buffer), backward adds the
// parameter's gradient into that .grad() in place, in one pass, and gives
// autograd none for it: every weight and bias of linear_bias and mlp_gelu,
// the classifier's weight. Otherwise (the default) it returns the gradient in
// the parameter's dtype, for autograd's AccumulateGrad. The in-place form
// spares, per parameter and step, the fp32 copy of the gradient that
// autocast's cast backward made and AccumulateGrad's add read again (20 bytes
// of traffic per parameter down to 12; for a bias, two small kernels). Only
// for a caller that owns .grad(): no hooks on it (DDP's), no
// torch::autograd::grad().

// How linear_bias and mlp_gelu run, from the step's plan (the fused rung's
// sub-switches, variants/switches/): where the weight gradients go, and which
// cuBLASLt epilogues the CUDA path uses, so that on a GPU each fusion can be
// measured against its separate kernels. A GEMM left to ATen by these is not
// counted as a fallback. The CPU path never uses cuBLASLt.
struct LinearOptions {
  bool grads_into_buffers = false;  // flat-grads: dW and db added into the existing .grad()
  bool lt_epilogues = true;   // lt-epilogues: BIAS forward, BGRADB backward (CUDA)
  bool gelu_epilogue = true;  // gelu-epilogue: GELU_AUX_BIAS, DGELU (CUDA, with lt_epilogues);
                              // off: GELU and its derivative as separate ATen kernels
  // With lt_epilogues, how each epilogue GEMM site runs (variants/planners/gemm_plan.h:
  // PyTorch's ops or one of cuBLASLt's ways, with the algorithm), looked up
  // by layer name and role; the step sets it (--gemm-plan). Null: cuBLASLt's
  // first algorithm for every epilogue, as --gemm-plan lt.
  std::shared_ptr<const GemmPlan> plan;
  // cast-cache: the parameters' compute-dtype copies, refreshed by the step
  // after each optimizer update (variants/ops/cast_cache.h). An op reads its
  // weight's and bias's copy from here when it is fresh, and casts them
  // itself otherwise. Null: every forward casts (a model built without a step).
  std::shared_ptr<const CastCache> casts;
};

// x: (..., I); weight: (O, I); bias: (O). Returns (..., O). `layer` names
// the layer's sites in options.plan ("attn.c_attn", "attn.c_proj").
torch::Tensor linear_bias(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                          const LinearOptions& options = {}, const std::string& layer = "");
// at::linear(x, weight, bias).
torch::Tensor linear_bias_reference(const torch::Tensor& x, const torch::Tensor& weight,
                                    const torch::Tensor& bias);

// x: (..., C); fc_weight: (H, C); fc_bias: (H); proj_weight: (C, H); proj_bias: (C).
// Returns (..., C) = gelu_tanh(x fc_weight^T + fc_bias) proj_weight^T + proj_bias.
torch::Tensor mlp_gelu(const torch::Tensor& x, const torch::Tensor& fc_weight, const torch::Tensor& fc_bias,
                       const torch::Tensor& proj_weight, const torch::Tensor& proj_bias,
                       const LinearOptions& options = {});
// at::linear, at::gelu(approximate="tanh"), at::linear.
torch::Tensor mlp_gelu_reference(const torch::Tensor& x, const torch::Tensor& fc_weight,
                                 const torch::Tensor& fc_bias, const torch::Tensor& proj_weight,
                                 const torch::Tensor& proj_bias);

// The lm_head and the loss as one autograd node (llm.c's fused classifier):
// the mean cross-entropy of logits = x weight^T over their first valid_vocab
// columns, against targets. x: (..., C); weight: (Vp, C) (GPT-2's tied wte);
// targets: int64 with x's leading shape. Returns a () float32 loss.
// Forward computes the logits in one GEMM, then in one pass over them both
// the loss and its gradient, written over the logits (no fp32 probabilities,
// no second (N, Vp) tensor). Backward is then two GEMMs on that gradient,
// scaled by the upstream gradient of the loss on the (N, C) side, so the
// (N, Vp) logits are read from memory once in forward and once per GEMM in
// backward, against a third full pass when the gradient waits for backward.
// Under autocast x and weight are cast to its dtype, as a matmul would be.
// The loss's backward may run once per forward (the gradient is saved). Of
// options, grads_into_buffers, casts and the plan apply (the classifier's
// GEMMs are ATen's; on a CPU the plan may add the weight gradient into the
// flat buffer, F).
torch::Tensor classifier_cross_entropy(const torch::Tensor& x, const torch::Tensor& weight,
                                       const torch::Tensor& targets, int64_t valid_vocab,
                                       const LinearOptions& options = {});
// cross_entropy_reference (variants/ops/cross_entropy/cross_entropy.h) on at::matmul(x, weight^T).
torch::Tensor classifier_cross_entropy_reference(const torch::Tensor& x, const torch::Tensor& weight,
                                                 const torch::Tensor& targets, int64_t valid_vocab);

// Process-wide counts, for the report's fused switch ("effective" means the
// epilogues ran, not only that the op was called).
struct FusedLinearStats {
  int64_t linear_bias_calls = 0;   // forward calls of linear_bias
  int64_t mlp_gelu_calls = 0;      // forward calls of mlp_gelu
  int64_t classifier_calls = 0;    // forward calls of classifier_cross_entropy
  int64_t epilogue_gemms = 0;      // cuBLASLt GEMMs that ran with a fused epilogue (CUDA only)
  int64_t gelu_epilogue_gemms = 0; // of those, with GELU_AUX_BIAS or DGELU
  int64_t fallback_gemms = 0;      // GEMMs whose epilogue fell back to separate ATen ops (CUDA only)
  std::string last_fallback;       // why the last fallback happened ("" if none)
};
FusedLinearStats fused_linear_stats();

namespace detail {
// x2 (N, I) and bias (O) in the compute dtype, weight (O, I) in its own
// (cast inside) -> {y (N, O)}; saves x2, the weight and its cast.
struct LinearBiasFunction : public torch::autograd::Function<LinearBiasFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x2,
                                                const torch::Tensor& weight, const torch::Tensor& bias,
                                                const LinearOptions& options, const std::string& layer);
  // Returns {dx2, dweight (none when added into .grad()), dbias, none, none}.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs);
};

// x2 (N, C) and the biases in the compute dtype, the weights in their own
// (cast inside) -> {y (N, C)}; saves x2, both weights and their casts, pre
// (N, H), h (N, H).
struct MlpGeluFunction : public torch::autograd::Function<MlpGeluFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x2,
                                                const torch::Tensor& fc_weight, const torch::Tensor& fc_bias,
                                                const torch::Tensor& proj_weight, const torch::Tensor& proj_bias,
                                                const LinearOptions& options);
  // Returns {dx2, dfc_weight, dfc_bias, dproj_weight, dproj_bias, none}; a
  // weight's is none when it was added into its .grad().
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs);
};

// x2 (N, C) in the compute dtype, weight (Vp, C) in its own (cast inside),
// targets (N) -> {loss ()}; saves x2, the weight and its cast, and the
// logits' gradient (N, Vp), made in forward.
struct ClassifierCrossEntropyFunction : public torch::autograd::Function<ClassifierCrossEntropyFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x2,
                                                const torch::Tensor& weight, const torch::Tensor& targets,
                                                int64_t valid_vocab, const LinearOptions& options);
  // Returns {dx2, dweight (none when added into .grad()), none, none, none}.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs);
};
}  // namespace detail

}  // namespace ladder::fused
