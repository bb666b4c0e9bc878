// variants/cuda/cublaslt_matmul.h: the cuBLASLt GEMMs with epilogues behind
// variants/fused_linear.h. CUDA only (compiled with LADDER_WITH_CUDA).
//
// Every tensor is a contiguous row-major CUDA matrix of one dtype (float32 or
// bfloat16) on the current device; outputs are preallocated. Each call is
// enqueued on the current CUDA stream with the current cuBLASLt handle and
// workspace, and never synchronises, so it can be captured in a CUDA graph.
// Accumulation is fp32 (TF32 for float32 inputs when the float32 matmul
// precision allows it, as ATen's own GEMMs).
//
// Each returns false, with the reason in *why_not, when cuBLASLt has no
// algorithm for that epilogue at that shape, dtype and alignment; the caller
// then computes the same result with plain ATen ops. Any other cuBLASLt error
// throws with file:line.
#pragma once

#include <string>

#include <ATen/ATen.h>

namespace ladder::fused::cuda {

// y (N, O) = x (N, I) W^T + b, W (O, I), b (O). With `pre` defined (N, O),
// the epilogue keeps x W^T + b in `pre` and writes y = gelu_tanh(pre).
bool lt_linear_forward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                       at::Tensor& y, at::Tensor* pre, std::string* why_not);

// dW (O, I) = dy^T (O, N) x (N, I) and db (O) = sum over rows of dy, one GEMM.
bool lt_weight_bias_grad(const at::Tensor& dy, const at::Tensor& x, at::Tensor& dweight, at::Tensor& dbias,
                         std::string* why_not);

// dpre (N, I) = (dy (N, O) W (O, I)) * gelu_tanh'(pre (N, I)) and
// db (I) = sum over rows of dpre, one GEMM.
bool lt_input_grad_dgelu(const at::Tensor& dy, const at::Tensor& weight, const at::Tensor& pre,
                         at::Tensor& dpre, at::Tensor& dbias, std::string* why_not);

// The same GEMMs without their bias-gradient reduction, for a caller that
// sums the bias gradient apart (in fp32): dW (O, I) = dy^T x (no epilogue),
// and dpre (N, I) = (dy W) * gelu_tanh'(pre) (DGELU).
bool lt_weight_grad(const at::Tensor& dy, const at::Tensor& x, at::Tensor& dweight, std::string* why_not);
bool lt_input_grad_dgelu_only(const at::Tensor& dy, const at::Tensor& weight, const at::Tensor& pre,
                              at::Tensor& dpre, std::string* why_not);

// The workspace these GEMMs get. 0 (the default): torch's cuBLASLt workspace
// (at::cuda::getCUDABlasLtWorkspace: 1 MiB in torch 2.11 unless the
// CUBLASLT_WORKSPACE_SIZE environment variable says otherwise, in KiB).
// Otherwise a buffer of `bytes` that ladder owns, allocated now on the
// current device and kept (call it outside graph capture; a GEMM on another
// device keeps torch's). The heuristic is asked again for each size.
void set_lt_workspace_bytes(size_t bytes);
size_t lt_workspace_bytes();

}  // namespace ladder::fused::cuda
