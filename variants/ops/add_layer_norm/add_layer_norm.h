// variants/ops/add_layer_norm/add_layer_norm.h: the fused-ln op, the residual add and the
// LayerNorm after it in one pass per row (s = x + residual;
// y = LayerNorm(s) * weight + bias), beside the composite-ATen reference it
// must match (variants/ops/add_layer_norm/test_add_layer_norm.cpp; at GPT-2's widths
// tests/variants/test_fused_widths.cpp), and the count of its calls.
//
// An autograd Function. On CPU it runs fused C++ loops (one task per row,
// float accumulation, variants/ops/cpu_rows.h); on CUDA the kernels of
// variants/ops/add_layer_norm/add_layer_norm_cuda.cu on the current stream, without host
// synchronisation (CUDA-graph safe).
#pragma once

#include <cstdint>
#include <string>
#include <tuple>

#include <torch/torch.h>

#include "variants/ops/work.h"

namespace ladder::fused {

// s = x + residual; y = LayerNorm(s) * weight + bias over the last dim (eps).
// x: (..., C) float32 (the residual stream); residual: (..., C) float32 or
// bfloat16 (e.g. a bf16 linear output under autocast; it is added in fp32);
// weight, bias: (C) float32. Returns {s, y}: s (..., C) float32, y (..., C)
// in y_dtype, float32 or bfloat16. All arithmetic is in fp32; a bf16 y is
// rounded once on the way out, so that under bf16 autocast the next linear
// reads it without a cast kernel, and its gradient comes back in bf16 without
// one either (the backward reads dy in y's dtype).
// Differentiable w.r.t. x, residual, weight and bias.
std::tuple<torch::Tensor, torch::Tensor> add_layer_norm(const torch::Tensor& x, const torch::Tensor& residual,
                                                        const torch::Tensor& weight, const torch::Tensor& bias,
                                                        double eps = 1e-5, at::ScalarType y_dtype = at::kFloat);
// Composite ATen ops: s = x + residual.to(x.dtype());
// y = at::layer_norm(s, {C}, weight, bias, eps).to(y_dtype).
std::tuple<torch::Tensor, torch::Tensor> add_layer_norm_reference(const torch::Tensor& x,
                                                                  const torch::Tensor& residual,
                                                                  const torch::Tensor& weight,
                                                                  const torch::Tensor& bias, double eps = 1e-5,
                                                                  at::ScalarType y_dtype = at::kFloat);

// How many times add_layer_norm's forward ran in this process (a CUDA-graph
// replay runs none: it replays the captured kernels). The fused-ln switch is
// effective only if it ran (variants/ops/add_layer_norm/fused_ln_switch.cpp).
int64_t add_layer_norm_calls();

// Which access add_layer_norm's CUDA kernels take (--layer-norm-kernel;
// variants/ops/add_layer_norm/add_layer_norm_cuda.h): kAuto, the vector access wherever the
// width and the pointers' alignment allow it, else the row access; kRow,
// the row access always. Process-wide: a rung's process sets it once, before
// its first step (TrainStep).
enum class LayerNormKernel { kAuto, kRow };
void set_layer_norm_kernel(LayerNormKernel k);
LayerNormKernel layer_norm_kernel();
// "auto" or "row"; throws std::invalid_argument for any other name.
LayerNormKernel parse_layer_norm_kernel(const std::string& name);

// add_layer_norm's CUDA launches in this process, by the kernel that ran (a
// graph replay launches none of its own): what the fused-ln switch reports.
struct LayerNormLaunches {
  int64_t forward_vector = 0, forward_row = 0, backward_vector = 0, backward_row = 0;
  LayerNormLaunches operator-(const LayerNormLaunches& o) const;
};
LayerNormLaunches layer_norm_launches();

// The LayerNorms' sites in a step's work (variants/ops/work.h). Unfused: ATen's
// layer_norm over the fp32 stream (2L + 1 a micro-step: ln_1, ln_2, ln_f),
// each reading x and writing y and the rows' mean and rstd; its backward
// reads dy, x and the statistics and writes dx, dweight and dbias. With
// fused-ln, add_layer_norm (the 2L + 1 adds before them, the first being the
// embeddings' tok + pos): it reads x and the residual (the branch's output at
// the matmul dtype; pos for the first) and writes s, y (at the matmul dtype)
// and the statistics; its backward reads dy, ds (the next op's gradient of
// s; none for the last, whose s nothing reads) and s, and writes dx, and a
// dresidual of its own where the residual's dtype is not fp32.
void add_layer_norm_work(const WorkShape& shape, const WorkFlags& flags, WorkList& work);

namespace detail {
// The autograd Function behind add_layer_norm; declared here so that tests
// can inspect what it saves for backward.
struct AddLayerNormFunction : public torch::autograd::Function<AddLayerNormFunction> {
  // Returns {s, y}; saves s, weight, mean (N), rstd (N).
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                                const torch::Tensor& residual, const torch::Tensor& weight,
                                                const torch::Tensor& bias, double eps, at::ScalarType y_dtype);
  // Returns {dx, dresidual, dweight, dbias, none, none}.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs);
};
}  // namespace detail

}  // namespace ladder::fused
