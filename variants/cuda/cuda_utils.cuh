// variants/cuda/cuda_utils.cuh: what the fused ops' kernels and launchers
// share (variants/ops/add_layer_norm/add_layer_norm_cuda.cu, variants/ops/cross_entropy/cross_entropy_cuda.cu):
// the warp size and full shuffle mask, float/bf16 conversions, a warp sum,
// the dispatch from ElemType to the element type, ceil_div for grid sizes,
// and LADDER_CUDA_CHECK for launches (file:line on failure). For .cu files
// only: it needs nvcc's device builtins.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "profiler/common/cuda/cuda_check.h"
#include "variants/cuda/elem_type.h"

namespace ladder::fused::cuda {

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);  // round to nearest even, as on the CPU path
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// Calls f with a value of the element type that `type` stands for: float or
// __nv_bfloat16; `what` names the launcher in the error for any other.
template <typename F>
void dispatch_elem_type(ElemType type, const char* what, F&& f) {
  switch (type) {
    case ElemType::kFloat32: f(float{}); return;
    case ElemType::kBFloat16: f(__nv_bfloat16{}); return;
  }
  throw std::invalid_argument(std::string(what) + ": unknown ElemType " + std::to_string(int(type)));
}

inline unsigned ceil_div(int64_t a, int64_t b) { return unsigned((a + b - 1) / b); }

}  // namespace ladder::fused::cuda
