// variants/ops/add_layer_norm/add_layer_norm_cuda.h: launchers for the CUDA kernels behind
// variants/ops/add_layer_norm/add_layer_norm.h (residual add + LayerNorm, forward and backward).
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

// The kernels (add_layer_norm_cuda.cu), one each way: one warp per row,
// with one of two accesses. With allow_vector, where C is a multiple of 4 up
// to 2048 and every pointer is aligned for 4 elements, the vector access
// (four elements per access, the row kept in registers: each byte read
// once); otherwise, or without allow_vector, the row access (one element per
// access). The launchers return whether the vector access ran. Both compute in float, element by
// element alike; only the order of a row's sums differs.

// s = x + residual; y = (s - mean) * rstd * weight + bias, computed in float
// and stored in y_type.
bool add_layer_norm_forward(const float* x,         // (N, C)
                            const void* residual,   // (N, C) residual_type
                            ElemType residual_type,
                            const float* weight,    // (C)
                            const float* bias,      // (C)
                            float* s,               // (N, C) out
                            void* y,                // (N, C) out, y_type
                            ElemType y_type,
                            float* mean,            // (N) out
                            float* rstd,            // (N) out
                            int64_t N, int64_t C, float eps, cudaStream_t stream, bool allow_vector = true);

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
bool add_layer_norm_backward(const void* dy,        // (N, C) dy_type, or null
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
                             int64_t N, int64_t C, cudaStream_t stream, bool allow_vector = true);

}  // namespace ladder::fused::cuda
