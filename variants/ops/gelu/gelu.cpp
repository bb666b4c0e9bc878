// variants/ops/gelu/gelu.cpp: gelu_tanh and its derivative (see gelu.h).
#include "variants/ops/gelu/gelu.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include "variants/ops/cpu_rows.h"

namespace ladder::fused {

using namespace cpu_rows;  // the element helpers, unqualified in the loops below

namespace {

constexpr float kBeta = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kKappa = 0.044715f;
constexpr int64_t kGrain = 32768;  // elements a task

// exp(-2u), u clamped to +-40 first (the sigmoid below is 0 or 1 in float
// well before) so that it stays finite; NaN reaches the caller's product
// with x (NaN in, NaN out).
inline float exp_minus_2u(float u) {
  u = u < -40.0f ? -40.0f : u;
  u = u > 40.0f ? 40.0f : u;
  return exp_approx(-2.0f * u);
}

// 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)): the sigmoid of 2u, without the
// cancellation of 1 + tanh(u) where tanh(u) is near -1.
inline float half_one_plus_tanh(float u) { return 1.0f / (1.0f + exp_minus_2u(u)); }

template <typename T>
LADDER_CPU_CLONES void gelu_forward_range(int64_t begin, int64_t end, const T* __restrict x, T* __restrict y) {
  for (int64_t i = begin; i < end; ++i) {
    const float v = to_float(x[i]);
    y[i] = from_float<T>(v * half_one_plus_tanh(kBeta * (v + kKappa * v * v * v)));
  }
}

// dx may be dy (written over it): each element reads its own dy first.
template <typename T, typename D>
LADDER_CPU_CLONES void gelu_backward_range(int64_t begin, int64_t end, const D* dy, const T* __restrict x, D* dx) {
  for (int64_t i = begin; i < end; ++i) {
    const float v = to_float(x[i]);
    // s = 0.5 (1 + tanh u); d/dx of x s is s + x s (1 - s) 2 du/dx (1 - tanh^2 u = 4 s (1 - s)).
    const float u = kBeta * (v + kKappa * v * v * v);
    const float e = exp_minus_2u(u);
    const float s = 1.0f / (1.0f + e), one_minus_s = e * s;  // 1 - s without cancellation
    const float slope = s + 2.0f * v * s * one_minus_s * kBeta * (1.0f + 3.0f * kKappa * v * v);
    dx[i] = from_float<D>(to_float(dy[i]) * slope);
  }
}

bool loop_dtype(const torch::Tensor& t) { return t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16; }

}  // namespace

torch::Tensor gelu_tanh(const torch::Tensor& x_in) {
  if (!x_in.is_cpu() || !loop_dtype(x_in)) return at::gelu(x_in, "tanh");
  // Named like an ATen operator, so the breakdown counts it as GELU (elementwise).
  RECORD_FUNCTION("ladder::gelu_tanh", std::vector<c10::IValue>({x_in}));
  const auto x = x_in.contiguous();
  auto y = torch::empty_like(x);
  with_cpu_elem(x.scalar_type(), [&](auto elem) {
    using T = decltype(elem);
    const T* px = cpu_data<const T>(x);
    T* py = cpu_data<T>(y);
    at::parallel_for(0, x.numel(), kGrain, [&](int64_t b, int64_t e) { gelu_forward_range<T>(b, e, px, py); });
  });
  return y;
}

torch::Tensor gelu_tanh_backward(const torch::Tensor& dy_in, const torch::Tensor& x_in, bool dy_is_scratch) {
  if (!x_in.is_cpu() || !loop_dtype(x_in) || !loop_dtype(dy_in)) return at::gelu_backward(dy_in, x_in, "tanh");
  TORCH_CHECK(dy_in.sizes() == x_in.sizes(), "gelu_tanh_backward: dy ", dy_in.sizes(), " and x ", x_in.sizes(),
              " differ in shape");
  RECORD_FUNCTION("ladder::gelu_tanh_backward", std::vector<c10::IValue>({dy_in, x_in}));
  const auto x = x_in.contiguous();
  const bool in_place = dy_is_scratch && dy_in.is_contiguous();
  const auto dy = dy_in.contiguous();
  auto dx = in_place ? dy : torch::empty_like(dy);
  with_cpu_elem(x.scalar_type(), [&](auto x_elem) {
    with_cpu_elem(dy.scalar_type(), [&](auto d_elem) {
      using T = decltype(x_elem);
      using D = decltype(d_elem);
      const T* px = cpu_data<const T>(x);
      const D* pdy = cpu_data<const D>(dy);
      D* pdx = cpu_data<D>(dx);
      at::parallel_for(0, x.numel(), kGrain,
                       [&](int64_t b, int64_t e) { gelu_backward_range<T, D>(b, e, pdy, px, pdx); });
    });
  });
  return dx;
}

}  // namespace ladder::fused
