// variants/ops/add_layer_norm/add_layer_norm.cpp: add_layer_norm (see add_layer_norm.h): its
// input checks, the CPU rows, the adapter to the CUDA launchers
// (variants/ops/add_layer_norm/add_layer_norm_cuda.h), the autograd Function, the call count
// and the composite-ATen reference.
#include "variants/ops/add_layer_norm/add_layer_norm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include "variants/ops/cpu_rows.h"
#include "variants/ops/op_device.h"

#ifdef LADDER_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>

#include "variants/ops/add_layer_norm/add_layer_norm_cuda.h"
#endif

namespace ladder::fused {

using namespace cpu_rows;  // the row helpers, unqualified in the loops below
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

// ---- input checks --------------------------------------------------------------------

void check_add_layer_norm_inputs(const torch::Tensor& x, const torch::Tensor& residual,
                                 const torch::Tensor& weight, const torch::Tensor& bias, at::ScalarType y_dtype) {
  constexpr const char* op = "add_layer_norm";
  TORCH_CHECK(x.defined() && residual.defined() && weight.defined() && bias.defined(), op,
              ": x, residual, weight and bias must all be defined tensors");
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) > 0, op, ": x has shape ", x.sizes(),
              "; expected (..., C) with C > 0");
  const int64_t C = x.size(-1);
  TORCH_CHECK(x.scalar_type() == at::kFloat, op, ": x has dtype ", x.scalar_type(),
              "; expected float32 (the residual stream)");
  TORCH_CHECK(residual.sizes() == x.sizes(), op, ": residual has shape ", residual.sizes(), " but x has shape ",
              x.sizes(), "; expected the same shape");
  TORCH_CHECK(residual.scalar_type() == at::kFloat || residual.scalar_type() == at::kBFloat16, op,
              ": residual has dtype ", residual.scalar_type(), "; expected float32 or bfloat16");
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == C, op, ": weight has shape ", weight.sizes(),
              "; expected (C) = (", C, ") to match x's last dim");
  TORCH_CHECK(bias.dim() == 1 && bias.size(0) == C, op, ": bias has shape ", bias.sizes(), "; expected (C) = (",
              C, ") to match x's last dim");
  TORCH_CHECK(weight.scalar_type() == at::kFloat && bias.scalar_type() == at::kFloat, op,
              ": weight and bias have dtypes ", weight.scalar_type(), " and ", bias.scalar_type(),
              "; expected float32");
  TORCH_CHECK(y_dtype == at::kFloat || y_dtype == at::kBFloat16, op, ": y_dtype is ", y_dtype,
              "; expected float32 or bfloat16");
  check_device_supported(x, op, "x");
  check_same_device(residual, x, op, "residual", "x");
  check_same_device(weight, x, op, "weight", "x");
  check_same_device(bias, x, op, "bias", "x");
}

// ---- CPU: add + LayerNorm ------------------------------------------------------------
// Row functions take __restrict__ pointers so that gcc vectorises their loops
// without runtime alias checks. The *_rows functions run a range of rows, one
// thread's share, built once per ISA level (LADDER_CPU_CLONES); the *_cpu
// drivers split rows over threads.

// s = x + r; y = (s - mean) * rstd * weight + bias for one row of C.
template <typename R, typename Y>
inline void add_layer_norm_forward_row(const float* __restrict__ x, const R* __restrict__ r,
                                       const float* __restrict__ weight, const float* __restrict__ bias,
                                       float* __restrict__ s, Y* __restrict__ y, int64_t C, float eps,
                                       float& mean, float& rstd) {
  const float mu = lane_sum(C, [&](int64_t c) {
                     const float v = x[c] + to_float(r[c]);
                     s[c] = v;
                     return v;
                   }) / float(C);
  const float var = lane_sum(C, [&](int64_t c) {
                      const float d = s[c] - mu;
                      return d * d;
                    }) / float(C);
  const float rs = 1.f / std::sqrt(var + eps);
  for (int64_t c = 0; c < C; ++c) y[c] = from_float<Y>((s[c] - mu) * rs * weight[c] + bias[c]);
  mean = mu;
  rstd = rs;
}

template <typename R, typename Y>
LADDER_CPU_CLONES void add_layer_norm_forward_rows(int64_t begin, int64_t end, const float* x, const R* residual,
                                                   const float* weight, const float* bias, float* s, Y* y,
                                                   float* mean, float* rstd, int64_t C, float eps) {
  for (int64_t row = begin; row < end; ++row)
    add_layer_norm_forward_row(x + row * C, residual + row * C, weight, bias, s + row * C, y + row * C, C, eps,
                               mean[row], rstd[row]);
}

template <typename R, typename Y>
void add_layer_norm_forward_cpu(const float* x,         // (N, C)
                                const R* residual,      // (N, C)
                                const float* weight,    // (C)
                                const float* bias,      // (C)
                                float* s,               // (N, C) out
                                Y* y,                   // (N, C) out
                                float* mean,            // (N) out
                                float* rstd,            // (N) out
                                int64_t N, int64_t C, float eps) {
  const int64_t grain = std::max<int64_t>(1, 32768 / C);
  at::parallel_for(0, N, grain, [&](int64_t begin, int64_t end) {
    add_layer_norm_forward_rows(begin, end, x, residual, weight, bias, s, y, mean, rstd, C, eps);
  });
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * weight, for one
// row; adds dy * xhat and dy into the dweight/dbias partials dw, db.
template <typename D>
inline void add_layer_norm_backward_row(const D* __restrict__ dy, const float* __restrict__ s,
                                        const float* __restrict__ weight, float mu, float rs,
                                        float* __restrict__ dx, float* __restrict__ dw, float* __restrict__ db,
                                        int64_t C) {
  const float mean_g = lane_sum(C, [&](int64_t c) { return to_float(dy[c]) * weight[c]; }) / float(C);
  const float mean_gx =
      lane_sum(C, [&](int64_t c) { return to_float(dy[c]) * weight[c] * (s[c] - mu) * rs; }) / float(C);
  for (int64_t c = 0; c < C; ++c) {
    const float g = to_float(dy[c]);
    const float xhat = (s[c] - mu) * rs;
    dx[c] = rs * (g * weight[c] - mean_g - xhat * mean_gx);
    dw[c] += g * xhat;
    db[c] += g;
  }
}

// dx += ds_in; dresidual = dx in R (either may be null).
template <typename R>
inline void add_incoming_and_cast_row(const float* __restrict__ ds_in, float* __restrict__ dx,
                                      R* __restrict__ dresidual, int64_t C) {
  if (ds_in != nullptr)
    for (int64_t c = 0; c < C; ++c) dx[c] += ds_in[c];
  if (dresidual != nullptr)
    for (int64_t c = 0; c < C; ++c) dresidual[c] = from_float<R>(dx[c]);
}

template <typename D, typename R>
LADDER_CPU_CLONES void add_layer_norm_backward_rows(int64_t begin, int64_t end, const D* dy, const float* ds_in,
                                                    const float* s, const float* weight, const float* mean,
                                                    const float* rstd, float* dx, R* dresidual, float* dw,
                                                    float* db, int64_t C) {
  for (int64_t row = begin; row < end; ++row) {
    float* dx_row = dx + row * C;
    if (dy != nullptr)
      add_layer_norm_backward_row(dy + row * C, s + row * C, weight, mean[row], rstd[row], dx_row, dw, db, C);
    else
      std::fill(dx_row, dx_row + C, 0.f);
    add_incoming_and_cast_row(ds_in != nullptr ? ds_in + row * C : nullptr, dx_row,
                              dresidual != nullptr ? dresidual + row * C : nullptr, C);
  }
}

// dy, ds_in and dresidual may be null (see cuda/add_layer_norm.h, the same contract).
template <typename D, typename R>
void add_layer_norm_backward_cpu(const D* dy,          // (N, C) or null
                                 const float* ds_in,   // (N, C) or null
                                 const float* s,       // (N, C)
                                 const float* weight,  // (C)
                                 const float* mean,    // (N)
                                 const float* rstd,    // (N)
                                 float* dx,            // (N, C) out
                                 R* dresidual,         // (N, C) out, or null
                                 float* dweight,       // (C) out
                                 float* dbias,         // (C) out
                                 int64_t N, int64_t C) {
  // One chunk of rows per thread, each with its own dweight/dbias partials,
  // summed afterwards in chunk order: deterministic for a given thread count.
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), N));
  std::vector<float> partials(size_t(chunks * 2 * C), 0.f);  // (chunks, 2, C): dweight, dbias
  at::parallel_for(0, chunks, 1, [&](int64_t chunk_begin, int64_t chunk_end) {
    for (int64_t chunk = chunk_begin; chunk < chunk_end; ++chunk) {
      float* dw = partials.data() + chunk * 2 * C;
      add_layer_norm_backward_rows(N * chunk / chunks, N * (chunk + 1) / chunks, dy, ds_in, s, weight, mean, rstd,
                                   dx, dresidual, dw, dw + C, C);
    }
  });
  std::fill(dweight, dweight + C, 0.f);
  std::fill(dbias, dbias + C, 0.f);
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const float* dw = partials.data() + chunk * 2 * C;
    for (int64_t c = 0; c < C; ++c) {
      dweight[c] += dw[c];
      dbias[c] += dw[C + c];
    }
  }
}

// Optional tensor -> pointer or null.
const float* data_or_null(const torch::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

}  // namespace

// ---- autograd: add + LayerNorm ---------------------------------------------------------

namespace {
std::atomic<int64_t> g_add_layer_norm_calls{0};
std::atomic<LayerNormKernel> g_layer_norm_kernel{LayerNormKernel::kAuto};
// CUDA launches by kernel: forward vector, forward row, backward vector, backward row.
std::atomic<int64_t> g_kernel_launches[4] = {};

[[maybe_unused]] void count_launch(bool backward, bool vector) {
  g_kernel_launches[(backward ? 2 : 0) + (vector ? 0 : 1)].fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

int64_t add_layer_norm_calls() { return g_add_layer_norm_calls.load(); }

void set_layer_norm_kernel(LayerNormKernel k) { g_layer_norm_kernel.store(k); }
LayerNormKernel layer_norm_kernel() { return g_layer_norm_kernel.load(); }

LayerNormKernel parse_layer_norm_kernel(const std::string& name) {
  if (name == "auto") return LayerNormKernel::kAuto;
  if (name == "row") return LayerNormKernel::kRow;
  throw std::invalid_argument("layer norm kernel '" + name + "': expected auto or row");
}

LayerNormLaunches layer_norm_launches() {
  return {g_kernel_launches[0].load(), g_kernel_launches[1].load(), g_kernel_launches[2].load(),
          g_kernel_launches[3].load()};
}

LayerNormLaunches LayerNormLaunches::operator-(const LayerNormLaunches& o) const {
  return {forward_vector - o.forward_vector, forward_row - o.forward_row, backward_vector - o.backward_vector,
          backward_row - o.backward_row};
}

namespace detail {

variable_list AddLayerNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x_in,
                                            const torch::Tensor& residual_in, const torch::Tensor& weight_in,
                                            const torch::Tensor& bias_in, double eps, at::ScalarType y_dtype) {
  check_add_layer_norm_inputs(x_in, residual_in, weight_in, bias_in, y_dtype);
  g_add_layer_norm_calls.fetch_add(1, std::memory_order_relaxed);
  const auto x = x_in.contiguous(), residual = residual_in.contiguous();
  const auto weight = weight_in.contiguous(), bias = bias_in.contiguous();
  const int64_t C = x.size(-1), N = x.numel() / C;
  auto s = torch::empty(x.sizes(), x.options());                   // (..., C)
  auto y = torch::empty(x.sizes(), x.options().dtype(y_dtype));    // (..., C)
  auto mean = torch::empty({N}, x.options());                      // (N)
  auto rstd = torch::empty({N}, x.options());                      // (N)
  const bool residual_bf16 = residual.scalar_type() == at::kBFloat16;
  if (x.is_cuda()) {
#ifdef LADDER_WITH_CUDA
    const c10::cuda::CUDAGuard guard(x.device());
    const bool vector = cuda::add_layer_norm_forward(
        x.data_ptr<float>(), residual.data_ptr(), elem_type(residual.scalar_type()), weight.data_ptr<float>(),
        bias.data_ptr<float>(), s.data_ptr<float>(), y.data_ptr(), elem_type(y_dtype), mean.data_ptr<float>(),
        rstd.data_ptr<float>(), N, C, float(eps), current_stream(), layer_norm_kernel() == LayerNormKernel::kAuto);
    count_launch(/*backward=*/false, vector);
#endif
  } else {
    with_cpu_elem(residual.scalar_type(), [&](auto r_elem) {
      with_cpu_elem(y_dtype, [&](auto y_elem) {
        using R = decltype(r_elem);
        using Y = decltype(y_elem);
        add_layer_norm_forward_cpu(x.data_ptr<float>(), cpu_data<const R>(residual), weight.data_ptr<float>(),
                                   bias.data_ptr<float>(), s.data_ptr<float>(), cpu_data<Y>(y),
                                   mean.data_ptr<float>(), rstd.data_ptr<float>(), N, C, float(eps));
      });
    });
  }
  ctx->save_for_backward({s, weight, mean, rstd});
  ctx->saved_data["residual_bf16"] = residual_bf16;
  ctx->set_materialize_grads(false);  // an unused output's gradient stays undefined, read as 0
  return {s, y};
}

variable_list AddLayerNormFunction::backward(AutogradContext* ctx, variable_list grad_outputs) {
  const auto saved = ctx->get_saved_variables();
  const auto &s = saved[0], &weight = saved[1], &mean = saved[2], &rstd = saved[3];
  const bool residual_bf16 = ctx->saved_data["residual_bf16"].toBool();
  const torch::Tensor ds_in = grad_outputs[0].defined() ? grad_outputs[0].contiguous() : torch::Tensor();
  const torch::Tensor dy = grad_outputs[1].defined() ? grad_outputs[1].contiguous() : torch::Tensor();
  const int64_t C = s.size(-1), N = s.numel() / C;
  auto dx = torch::empty(s.sizes(), s.options());  // (..., C)
  auto dresidual = residual_bf16 ? torch::empty(s.sizes(), s.options().dtype(at::kBFloat16)) : torch::Tensor();
  auto dweight = torch::empty({C}, weight.options());
  auto dbias = torch::empty({C}, weight.options());
  // dy arrives in y's dtype (autograd casts an upstream gradient to it).
  const at::ScalarType dy_dtype = dy.defined() ? dy.scalar_type() : at::kFloat;
  if (s.is_cuda()) {
#ifdef LADDER_WITH_CUDA
    const c10::cuda::CUDAGuard guard(s.device());
    auto scratch = torch::empty({cuda::add_layer_norm_backward_scratch_floats(N, C)}, s.options());
    const bool vector = cuda::add_layer_norm_backward(
        dy.defined() ? dy.data_ptr() : nullptr, elem_type(dy_dtype), data_or_null(ds_in), s.data_ptr<float>(),
        weight.data_ptr<float>(), mean.data_ptr<float>(), rstd.data_ptr<float>(), dx.data_ptr<float>(),
        residual_bf16 ? dresidual.data_ptr() : nullptr,
        residual_bf16 ? cuda::ElemType::kBFloat16 : cuda::ElemType::kFloat32, dweight.data_ptr<float>(),
        dbias.data_ptr<float>(), scratch.data_ptr<float>(), N, C, current_stream(),
        layer_norm_kernel() == LayerNormKernel::kAuto);
    count_launch(/*backward=*/true, vector);
#endif
  } else {
    // An fp32 residual takes dx itself: dresidual stays undefined, so null.
    with_cpu_elem(dy_dtype, [&](auto dy_elem) {
      with_cpu_elem(residual_bf16 ? at::kBFloat16 : at::kFloat, [&](auto r_elem) {
        using D = decltype(dy_elem);
        using R = decltype(r_elem);
        add_layer_norm_backward_cpu(cpu_data<const D>(dy), data_or_null(ds_in), s.data_ptr<float>(),
                                    weight.data_ptr<float>(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
                                    dx.data_ptr<float>(), cpu_data<R>(dresidual), dweight.data_ptr<float>(),
                                    dbias.data_ptr<float>(), N, C);
      });
    });
  }
  // An fp32 residual gets the same gradient as x (as AddBackward returns one tensor for both).
  return {dx, residual_bf16 ? dresidual : dx, dweight, dbias, torch::Tensor(), torch::Tensor()};
}

}  // namespace detail

// ---- public API --------------------------------------------------------------------------

std::tuple<torch::Tensor, torch::Tensor> add_layer_norm(const torch::Tensor& x, const torch::Tensor& residual,
                                                        const torch::Tensor& weight, const torch::Tensor& bias,
                                                        double eps, at::ScalarType y_dtype) {
  // Named like an ATen operator, so profilers attribute its time (backward
  // is named by autograd: CppNode<...AddLayerNormFunction>).
  RECORD_FUNCTION("ladder::add_layer_norm", std::vector<c10::IValue>({x, residual}));
  auto outputs = detail::AddLayerNormFunction::apply(x, residual, weight, bias, eps, y_dtype);
  return {outputs[0], outputs[1]};
}

std::tuple<torch::Tensor, torch::Tensor> add_layer_norm_reference(const torch::Tensor& x,
                                                                  const torch::Tensor& residual,
                                                                  const torch::Tensor& weight,
                                                                  const torch::Tensor& bias, double eps,
                                                                  at::ScalarType y_dtype) {
  auto s = x + residual.to(x.scalar_type());                                       // (..., C)
  auto y = at::layer_norm(s, {x.size(-1)}, weight, bias, eps).to(y_dtype);         // (..., C)
  return {s, y};
}

namespace {

void add_unfused_layer_norm_work(const WorkShape& s, const WorkFlags& f, WorkList& work) {
  using profiler::Category;
  const double N = double(s.rows()), C = double(s.n_embd);
  const int64_t m = s.micro_steps, L = s.n_layer;
  const int64_t forwards = (2 * L * f.block_forwards() + 1) * m, backwards = (2 * L + 1) * m;
  work.memory("ln/forward", Category::kElementwiseNorm, forwards, N * C * 4 + 2 * C * 4, N * C * 4 + 2 * N * 4);
  work.memory("ln/backward", Category::kElementwiseNorm, backwards, 2 * N * C * 4 + 2 * N * 4 + C * 4,
              N * C * 4 + 2 * C * 4);
}

void add_fused_layer_norm_work(const WorkShape& s, const WorkFlags& f, WorkList& work) {
  using profiler::Category;
  const double a = double(s.act_bytes), N = double(s.rows()), T = double(s.seq), C = double(s.n_embd);
  const int64_t m = s.micro_steps, L = s.n_layer;
  const double stats = 2 * N * 4, params = 2 * C * 4;
  // Forward: s (fp32), y (the matmul dtype), the statistics.
  const double written = N * C * 4 + N * C * a + stats;
  work.memory("embedding+ln_1/add_ln forward", Category::kElementwiseNorm, m, N * C * 4 + T * C * 4 + params,
              written);
  work.memory("block/add_ln forward", Category::kElementwiseNorm, 2 * L * f.block_forwards() * m,
              N * C * 4 + N * C * a + params, written);
  // Backward: dy (matmul dtype), ds (the next add_ln's dx), s and the statistics in; dx, dweight, dbias
  // out, and a dresidual of its own where the residual is bf16. The first's residual is pos (fp32); the
  // last's s (before ln_f) is read by nothing, so it has no ds.
  const double dresidual = a == 4 ? 0.0 : N * C * a, in = N * C * (a + 4) + stats + C * 4;
  work.memory("embedding+ln_1/add_ln backward", Category::kElementwiseNorm, m, in + N * C * 4, N * C * 4 + params);
  work.memory("block/add_ln backward", Category::kElementwiseNorm, (2 * L - 1) * m, in + N * C * 4,
              N * C * 4 + dresidual + params);
  work.memory("ln_f/add_ln backward", Category::kElementwiseNorm, m, in, N * C * 4 + dresidual + params);
}

}  // namespace

void add_layer_norm_work(const WorkShape& s, const WorkFlags& f, WorkList& work) {
  if (f.fused_ln) add_fused_layer_norm_work(s, f, work);
  else add_unfused_layer_norm_work(s, f, work);
}

}  // namespace ladder::fused
