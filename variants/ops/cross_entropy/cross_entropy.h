// variants/ops/cross_entropy/cross_entropy.h: the loss half of the fused-ce classifier
// (classifier_cross_entropy, variants/fused_linear/fused_linear.h): the mean
// cross-entropy over the first valid_vocab columns of padded logits (llm.c
// semantics) and, in the same pass over each row, its gradient written over
// the logits; beside the composite-ATen reference it must match
// (variants/ops/cross_entropy/test_cross_entropy.cpp; at GPT-2's vocabulary
// tests/variants/test_fused_widths.cpp).
//
// On CPU fused C++ loops (one task per row, float accumulation,
// variants/ops/cpu_rows.h); on CUDA the kernel of variants/ops/cross_entropy/cross_entropy_cuda.cu
// on the current stream, without host synchronisation (CUDA-graph safe).
#pragma once

#include <cstdint>
#include <string>

#include <torch/torch.h>

#include "variants/ops/work.h"

namespace ladder::fused {

// Not differentiable: the forward half of the classifier's one-pass loss
// (classifier_cross_entropy, variants/fused_linear/fused_linear.h). Returns the mean
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
// Which CUDA kernel the op runs (--cross-entropy-kernel;
// variants/ops/cross_entropy/cross_entropy_cuda.h): kBatched, a batch of values at a time with
// exp as one FFMA and MUFU.EX2 a value; kOnline, one value at a time with
// expf (the kernel of 2026-11-27). The same results within a few float ulps.
// Process-wide: a rung's process sets it once, before its first step
// (TrainStep). The CPU loops are the same either way.
enum class CrossEntropyKernel { kBatched, kOnline };
void set_cross_entropy_kernel(CrossEntropyKernel k);
CrossEntropyKernel cross_entropy_kernel();
// "batched" or "online"; throws std::invalid_argument for any other name.
CrossEntropyKernel parse_cross_entropy_kernel(const std::string& name);

// at::cross_entropy_loss (mean) on logits.narrow(1, 0, valid_vocab).float();
// its gradient w.r.t. the logits is what the op above writes.
torch::Tensor cross_entropy_reference(const torch::Tensor& logits, const torch::Tensor& targets,
                                      int64_t valid_vocab);

// The loss's sites in a step's work (variants/ops/work.h), after the classifier's
// GEMM (gemm_sites.h). fused-ce: this op's one pass reads the logits' first
// V columns and the targets, and writes the gradient over all Vp columns
// (zeros on the padding) and the rows' losses. Unfused (lm_loss): with
// vocab-pad the first V columns copied out of the padded logits (and, in
// backward, the gradient padded back with zeros); under bf16 autocast the
// logits cast to fp32 and the gradient back; log_softmax and nll_loss, and
// their backward.
void add_loss_work(const WorkShape& shape, const WorkFlags& flags, WorkList& work);

}  // namespace ladder::fused
