// variants/ops/gelu/gelu.h: GPT-2's GELU (the tanh form) and its derivative for the
// fused MLP, as one vectorised pass each on a CPU.
//
// ATen's CPU kernels for approximate="tanh" took 1.05 ms (forward) and
// 1.23 ms (backward) for a (1024, 1024) fp32 tensor on a 2-vCPU Xeon with
// AVX-512, where ATen's plain tanh of it took 0.18 ms (torch 2.11,
// 2026-11-29): 10 ms of a 446 ms cpu-default step. These loops compute
// 0.5 (1 + tanh u) as the sigmoid 1 / (1 + exp(-2u)) with cpu_rows'
// branch-free exp, so gcc vectorises them (variants/ops/cpu_rows.h), and it has
// no cancellation where tanh u is near -1. On CUDA, and for a dtype other
// than float32 and bfloat16 (the planner's fp64 checks), they are ATen's.
#pragma once

#include <torch/torch.h>

namespace ladder::fused {

// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), at::gelu(x, "tanh"):
// float32 or bfloat16 x (computed in float), a new tensor of x's dtype.
torch::Tensor gelu_tanh(const torch::Tensor& x);
// d/dx of gelu_tanh at x times dy, at::gelu_backward(dy, x, "tanh"): dy and
// x of one shape; returns dx in dy's dtype. On a CPU it is written over dy
// when dy is contiguous and not needed again (dy_is_scratch).
torch::Tensor gelu_tanh_backward(const torch::Tensor& dy, const torch::Tensor& x, bool dy_is_scratch);

}  // namespace ladder::fused
