// variants/cuda/elem_type.h: ElemType, the element type of a tensor that the
// fused ops' CUDA launchers (variants/ops/add_layer_norm/add_layer_norm_cuda.h,
// variants/ops/cross_entropy/cross_entropy_cuda.h) take as float32 or bfloat16. No CUDA or
// LibTorch headers: the C++ adapters and the .cu files both include it.
#pragma once

namespace ladder::fused::cuda {

// Element type of an input that may be float32 or bfloat16.
enum class ElemType { kFloat32, kBFloat16 };

}  // namespace ladder::fused::cuda
