// variants/op_device.h: what the fused ops (variants/add_layer_norm.h,
// variants/cross_entropy.h) share to run on their inputs' device: the checks
// that it is a device they support and that every input is on it, and, in
// CUDA builds, the launchers' element type for a dtype and the current stream.
#pragma once

#include <torch/torch.h>

#ifdef LADDER_WITH_CUDA
#include <c10/cuda/CUDAStream.h>

#include "variants/cuda/elem_type.h"
#endif

namespace ladder::fused {

inline void check_device_supported(const torch::Tensor& t, const char* op, const char* name) {
  TORCH_CHECK(t.is_cpu() || t.is_cuda(), op, ": ", name, " is on ", t.device(),
              "; expected a CPU or CUDA tensor");
#ifndef LADDER_WITH_CUDA
  TORCH_CHECK(!t.is_cuda(), op, ": ", name, " is on ", t.device(),
              " but ladder was built without CUDA (LADDER_WITH_CUDA is not defined); "
              "rebuild with a CUDA toolkit and a CUDA LibTorch, or pass CPU tensors");
#endif
}

inline void check_same_device(const torch::Tensor& t, const torch::Tensor& ref, const char* op, const char* name,
                              const char* ref_name) {
  TORCH_CHECK(t.device() == ref.device(), op, ": ", name, " is on ", t.device(), " but ", ref_name, " is on ",
              ref.device(), "; expected the same device");
}

#ifdef LADDER_WITH_CUDA
inline cuda::ElemType elem_type(at::ScalarType t) {
  return t == at::kBFloat16 ? cuda::ElemType::kBFloat16 : cuda::ElemType::kFloat32;
}
inline cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }
#endif

}  // namespace ladder::fused
