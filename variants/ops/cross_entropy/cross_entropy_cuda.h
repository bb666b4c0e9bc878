// variants/ops/cross_entropy/cross_entropy_cuda.h: the launcher for the CUDA kernel behind
// variants/ops/cross_entropy/cross_entropy.h (the classifier's cross-entropy and its gradient).
//
// Plain pointers, sizes and a stream: no LibTorch types, so the .cu compiles
// without ATen headers. All tensors are contiguous, row-major, on the
// stream's device. Every launcher runs asynchronously on `stream` (no host
// synchronisation, so it can be captured in a CUDA graph) and throws
// std::runtime_error with file:line if a launch fails. Float accumulation
// throughout; bf16 is __nv_bfloat16 where the API allows it.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "variants/cuda/elem_type.h"

namespace ladder::fused::cuda {

// One block per row, over the first V of Vp columns. Writes the per-row loss
// lse - logits[target] and the per-row logsumexp, and in the same kernel
// grad = (softmax - onehot(target)) * grad_scale over [0, V) and exactly 0
// over [V, Vp), in logits_type. grad may be logits itself (llm.c's fused
// classifier: the logits are read from memory once, for the loss and its
// gradient together). A target outside [0, V) is not checked on the host
// (that would synchronise); its row's loss is NaN, and so is its gradient
// over [0, V). batched: the batched kernel (a batch of values at a time,
// exp as one FFMA and MUFU.EX2 a value), else the online kernel (one value at
// a time, expf); the same results within a few float ulps.
void cross_entropy_loss_and_grad(const void* logits,     // (N, Vp) logits_type
                                 ElemType logits_type,
                                 const int64_t* targets,  // (N)
                                 float* losses,           // (N) out
                                 float* lse,              // (N) out
                                 void* grad,              // (N, Vp) out, logits_type; may be logits
                                 float grad_scale,
                                 int64_t N, int64_t Vp, int64_t V, cudaStream_t stream, bool batched);

}  // namespace ladder::fused::cuda
