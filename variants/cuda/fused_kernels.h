// variants/cuda/fused_kernels.h: launchers for the CUDA kernels behind
// variants/fused_ops.h (residual add + LayerNorm, the classifier's cross-entropy).
//
// Plain pointers, sizes and a stream: no LibTorch types, so fused_kernels.cu
// compiles without ATen headers. All tensors are contiguous, row-major, on the
// stream's device. Every launcher runs asynchronously on `stream` (no host
// synchronisation, so it can be captured in a CUDA graph) and throws
// std::runtime_error with file:line if a launch fails. Float accumulation
// throughout; bf16 is __nv_bfloat16 where the API allows it.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace ladder::fused::cuda {

// Element type of an input that may be float32 or bfloat16.
enum class ElemType { kFloat32, kBFloat16 };

// ---- add + LayerNorm -----------------------------------------------------------
// One warp per row. s = x + residual; y = (s - mean) * rstd * weight + bias,
// computed in float and stored in y_type.
void add_layer_norm_forward(const float* x,         // (N, C)
                            const void* residual,   // (N, C) residual_type
                            ElemType residual_type,
                            const float* weight,    // (C)
                            const float* bias,      // (C)
                            float* s,               // (N, C) out
                            void* y,                // (N, C) out, y_type
                            ElemType y_type,
                            float* mean,            // (N) out
                            float* rstd,            // (N) out
                            int64_t N, int64_t C, float eps, cudaStream_t stream);

// The weight/bias gradient is reduced in two deterministic stages: partial
// sums over chunks of kLayerNormRowsPerChunk rows, made by the kernel that
// computes the rows' input gradient (so dy and s are read once), then a sum
// over chunks in order. The caller provides the partial buffer of this many
// floats. C may be at most 6144 (the partials live in shared memory).
inline constexpr int64_t kLayerNormRowsPerChunk = 32;
inline constexpr int64_t add_layer_norm_backward_scratch_floats(int64_t N, int64_t C) {
  return 2 * C * ((N + kLayerNormRowsPerChunk - 1) / kLayerNormRowsPerChunk);
}

// dy or ds_in may be null (that output received no gradient: treated as 0).
// ds = rstd * (g - mean(g) - xhat * mean(g * xhat)) + ds_in, with g = dy * weight.
// dx gets ds; dresidual, when not null, gets ds in residual_type (pass null when
// the residual is float32 and dx serves both). dweight = sum_rows dy * xhat,
// dbias = sum_rows dy (both zero when dy is null). dy is read in dy_type (y's
// dtype) and widened to float.
void add_layer_norm_backward(const void* dy,        // (N, C) dy_type, or null
                             ElemType dy_type,
                             const float* ds_in,    // (N, C) or null
                             const float* s,        // (N, C) saved forward output
                             const float* weight,   // (C)
                             const float* mean,     // (N)
                             const float* rstd,     // (N)
                             float* dx,             // (N, C) out
                             void* dresidual,       // (N, C) out in residual_type, or null
                             ElemType residual_type,
                             float* dweight,        // (C) out
                             float* dbias,          // (C) out
                             float* scratch,        // add_layer_norm_backward_scratch_floats(N, C)
                             int64_t N, int64_t C, cudaStream_t stream);

// ---- cross-entropy and its gradient ----------------------------------------------
// One block per row, over the first V of Vp columns. Writes the per-row loss
// lse - logits[target] and the per-row logsumexp, and in the same kernel
// grad = (softmax - onehot(target)) * grad_scale over [0, V) and exactly 0
// over [V, Vp), in logits_type. grad may be logits itself (llm.c's fused
// classifier: the logits are read from memory once, for the loss and its
// gradient together). A target outside [0, V) is not checked on the host
// (that would synchronise); its row's loss is NaN, and so is its gradient
// over [0, V).
void cross_entropy_loss_and_grad(const void* logits,     // (N, Vp) logits_type
                                 ElemType logits_type,
                                 const int64_t* targets,  // (N)
                                 float* losses,           // (N) out
                                 float* lse,              // (N) out
                                 void* grad,              // (N, Vp) out, logits_type; may be logits
                                 float grad_scale,
                                 int64_t N, int64_t Vp, int64_t V, cudaStream_t stream);

}  // namespace ladder::fused::cuda
