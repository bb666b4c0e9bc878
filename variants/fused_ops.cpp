// variants/fused_ops.cpp: the fused residual+LayerNorm and the classifier's
// one-pass cross-entropy (see fused_ops.h): input checks, the CPU
// implementations, the adapters to the CUDA launchers, the autograd Function
// and the composite-ATen references.
//
// CPU: rows split over threads with at::parallel_for, float accumulation.
// Row loops are written so that gcc -O3 vectorises them without -ffast-math:
// sums keep kLanes independent accumulators, max compares integer keys, exp
// is a branch-free polynomial and bf16 moves as raw bits. Note: with
// LibTorch's OpenMP builds at::parallel_for is an inline header that runs in
// parallel only in translation units compiled with -fopenmp; without it the
// rows run serially (still correctly).
#include "variants/fused_ops.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#ifdef LADDER_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "variants/cuda/fused_kernels.h"
#endif

namespace ladder::fused {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

// ---- input checks --------------------------------------------------------------------

void check_device_supported(const torch::Tensor& t, const char* op, const char* name) {
  TORCH_CHECK(t.is_cpu() || t.is_cuda(), op, ": ", name, " is on ", t.device(),
              "; expected a CPU or CUDA tensor");
#ifndef LADDER_WITH_CUDA
  TORCH_CHECK(!t.is_cuda(), op, ": ", name, " is on ", t.device(),
              " but ladder was built without CUDA (LADDER_WITH_CUDA is not defined); "
              "rebuild with a CUDA toolkit and a CUDA LibTorch, or pass CPU tensors");
#endif
}

void check_same_device(const torch::Tensor& t, const torch::Tensor& ref, const char* op, const char* name,
                       const char* ref_name) {
  TORCH_CHECK(t.device() == ref.device(), op, ": ", name, " is on ", t.device(), " but ", ref_name, " is on ",
              ref.device(), "; expected the same device");
}

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

void check_cross_entropy_inputs(const torch::Tensor& logits, const torch::Tensor& targets, int64_t valid_vocab) {
  constexpr const char* op = "cross_entropy_loss_and_grad_over_logits";
  TORCH_CHECK(logits.defined() && targets.defined(), op, ": logits and targets must be defined tensors");
  TORCH_CHECK(logits.dim() == 2, op, ": logits has shape ", logits.sizes(), "; expected (N, Vp)");
  TORCH_CHECK(logits.scalar_type() == at::kFloat || logits.scalar_type() == at::kBFloat16, op,
              ": logits has dtype ", logits.scalar_type(), "; expected float32 or bfloat16");
  const int64_t N = logits.size(0), Vp = logits.size(1);
  TORCH_CHECK(N > 0, op, ": logits has shape ", logits.sizes(), "; expected at least one row");
  TORCH_CHECK(valid_vocab >= 1 && valid_vocab <= Vp, op, ": valid_vocab = ", valid_vocab,
              " is outside [1, Vp = ", Vp, "] for logits of shape ", logits.sizes());
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == N, op, ": targets has shape ", targets.sizes(),
              "; expected (N) = (", N, ") to match logits ", logits.sizes());
  TORCH_CHECK(targets.scalar_type() == at::kLong, op, ": targets has dtype ", targets.scalar_type(),
              "; expected int64");
  check_device_supported(logits, op, "logits");
  check_same_device(targets, logits, op, "targets", "logits");
}

// CPU only: on CUDA this would synchronise (see fused_ops.h).
void check_targets_in_range_cpu(const torch::Tensor& targets, int64_t valid_vocab) {  // (N) int64, contiguous
  const int64_t* t = targets.data_ptr<int64_t>();
  for (int64_t i = 0; i < targets.numel(); ++i)
    TORCH_CHECK(t[i] >= 0 && t[i] < valid_vocab, "cross_entropy_loss_and_grad_over_logits: targets[", i,
                "] = ", t[i], " is outside [0, valid_vocab = ", valid_vocab, ")");
}

// ---- CPU numerics --------------------------------------------------------------------

// The row-range functions are compiled for AVX-512, AVX2+FMA and baseline
// x86-64, picked once at load time (gcc function multi-versioning), so the
// library still runs on any x86-64 while using the wide vectors ATen's own
// kernels use. Elsewhere they are compiled once for the target.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 && defined(__x86_64__) && defined(__linux__)
#define LADDER_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LADDER_CPU_CLONES
#endif

inline float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Independent accumulators per sum: float addition is not associative, so
// without them -O3 (no -ffast-math) would leave a single-accumulator loop
// scalar. 16 floats are one AVX-512 register, two AVX2 or four SSE ones; they
// are combined pairwise at the end, also vectorised.
constexpr int64_t kLanes = 16;

template <typename F>
inline float lane_sum(int64_t n, F&& term) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) acc[k] += term(i + k);
  for (int64_t width = kLanes / 2; width > 0; width /= 2)
    for (int64_t k = 0; k < width; ++k) acc[k] += acc[k + width];
  float total = acc[0];
  for (; i < n; ++i) total += term(i);
  return total;
}

// Float order as int32 order (negative floats have their magnitude bits
// flipped), so that max reductions vectorise: gcc vectorises integer max but
// not float max without -ffinite-math-only. A NaN with the sign bit clear wins
// the max, one with it set loses; either way it still reaches lane_sum.
inline int32_t order_key(float f) {
  const int32_t b = int32_t(float_to_bits(f));
  return b ^ ((b >> 31) & 0x7FFFFFFF);
}
inline float from_order_key(int32_t k) { return bits_to_float(uint32_t(k ^ ((k >> 31) & 0x7FFFFFFF))); }

template <typename F>
inline float max_over(int64_t n, F&& value) {
  int32_t m = order_key(-std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < n; ++i) {
    const int32_t k = order_key(value(i));
    m = k > m ? k : m;
  }
  return from_order_key(m);
}

// bf16 travels as its raw bits (uint16_t) through the CPU loops: gcc does not
// vectorise loops that load or store the c10::BFloat16 struct.
using Bf16Bits = uint16_t;

inline float to_float(float v) { return v; }
inline float to_float(Bf16Bits v) { return bits_to_float(uint32_t(v) << 16); }  // exact

template <typename T>
inline T from_float(float v);
template <>
inline float from_float<float>(float v) {
  return v;
}
// Round to nearest even, NaN to the canonical bf16 NaN 0x7FC0, as c10::BFloat16(float)
// does, but branch-free so that the loops storing it vectorise.
template <>
inline Bf16Bits from_float<Bf16Bits>(float v) {
  const uint32_t b = float_to_bits(v);
  const uint32_t rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16;
  const uint32_t nan_mask = (b & 0x7FFFFFFFu) > 0x7F800000u ? ~0u : 0u;
  return Bf16Bits((rounded & ~nan_mask) | (0x7FC0u & nan_mask));
}

// Calls f with a value of the CPU element type that stands for dtype: float,
// or Bf16Bits for bfloat16 (the two element types the ops take; the input
// checks have excluded any other).
template <typename F>
void with_cpu_elem(at::ScalarType dtype, F&& f) {
  if (dtype == at::kBFloat16)
    f(Bf16Bits{});
  else
    f(float{});
}

// A tensor's data as T (float, or Bf16Bits for bfloat16); null when undefined.
template <typename T>
T* cpu_data(const torch::Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

// exp(x) for x <= 88: Cephes' expf polynomial after a Cody-Waite range
// reduction, about 1 ulp. Inputs below -87 (and -inf) give exp(-87) ~ 1.6e-38
// instead of underflowing; NaN stays NaN. Integer masks instead of branches
// keep callers' loops vectorisable under the default -ftrapping-math.
inline float exp_approx(float x) {
  constexpr uint32_t kMinus87 = 0xC2AE0000u;  // bits of -87.0f
  const uint32_t b = float_to_bits(x);
  // x < -87 (a negative float with larger magnitude bits) and not NaN.
  const uint32_t below = (b > kMinus87 ? ~0u : 0u) & ((b & 0x7FFFFFFFu) <= 0x7F800000u ? ~0u : 0u);
  x = bits_to_float((b & ~below) | (kMinus87 & below));
  constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float t = x * 1.44269504088896341f + kRoundMagic;
  const float n = t - kRoundMagic;  // round(x / ln 2)
  float r = x - n * 0.693359375f;   // ln 2 in two parts, exact n * hi
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n from n's bits in t's mantissa (no float->int conversion, so no UB on NaN).
  const uint32_t exponent = (float_to_bits(t) - float_to_bits(kRoundMagic) + 127u) << 23;
  return p * bits_to_float(exponent);
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

// dy, ds_in and dresidual may be null (see fused_kernels.h, the same contract).
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

// ---- CPU: softmax cross-entropy ------------------------------------------------------

// The logsumexp of one row's first V logits.
template <typename T>
inline float logsumexp_row(const T* __restrict__ x, int64_t V) {
  const float m = max_over(V, [&](int64_t j) { return to_float(x[j]); });
  const float sum = lane_sum(V, [&](int64_t j) { return exp_approx(to_float(x[j]) - m); });
  return m + std::log(sum);
}

// grad = (softmax - onehot(t)) * scale over [0, V), 0 over [V, Vp), for one
// row, written over the logits themselves: the target logit is read before
// the row is overwritten; one pointer, so the loop vectorises.
template <typename T>
inline void cross_entropy_grad_row_in_place(T* x, float lse, int64_t t, float scale, int64_t Vp, int64_t V) {
  const float xt = to_float(x[t]);
  for (int64_t j = 0; j < V; ++j) x[j] = from_float<T>(exp_approx(to_float(x[j]) - lse) * scale);
  for (int64_t j = V; j < Vp; ++j) x[j] = from_float<T>(0.f);
  x[t] = from_float<T>((exp_approx(xt - lse) - 1.f) * scale);
}

// The loss and, over the row itself, its gradient: the row is still in cache
// for the second pass (the CPU side of the classifier's one-pass loss).
template <typename T>
LADDER_CPU_CLONES void cross_entropy_loss_and_grad_rows(int64_t begin, int64_t end, T* logits,
                                                        const int64_t* targets, float* losses, float* lse,
                                                        float scale, int64_t Vp, int64_t V) {
  for (int64_t row = begin; row < end; ++row) {
    T* x = logits + row * Vp;
    lse[row] = logsumexp_row(x, V);
    losses[row] = lse[row] - to_float(x[targets[row]]);
    cross_entropy_grad_row_in_place(x, lse[row], targets[row], scale, Vp, V);
  }
}

#ifdef LADDER_WITH_CUDA
cuda::ElemType elem_type(at::ScalarType t) {
  return t == at::kBFloat16 ? cuda::ElemType::kBFloat16 : cuda::ElemType::kFloat32;
}
cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }
#endif

// Optional tensor -> pointer or null.
const float* data_or_null(const torch::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

}  // namespace

// ---- the classifier's cross-entropy ---------------------------------------------------------

torch::Tensor cross_entropy_loss_and_grad_over_logits(const torch::Tensor& logits, const torch::Tensor& targets,
                                                      int64_t valid_vocab) {
  check_cross_entropy_inputs(logits, targets, valid_vocab);
  TORCH_CHECK(logits.is_contiguous() && targets.is_contiguous(),
              "cross_entropy_loss_and_grad_over_logits: logits and targets must be contiguous (the gradient is "
              "written over the logits' own memory)");
  const int64_t N = logits.size(0), Vp = logits.size(1), V = valid_vocab;
  const auto f32 = logits.options().dtype(at::kFloat);
  auto losses = torch::empty({N}, f32);  // (N), freed after the mean
  auto lse = torch::empty({N}, f32);     // (N), each row's logsumexp
  const float scale = 1.f / float(N);
  if (logits.is_cuda()) {
    torch::Tensor loss;
#ifdef LADDER_WITH_CUDA
    const c10::cuda::CUDAGuard guard(logits.device());
    cuda::cross_entropy_loss_and_grad(logits.data_ptr(), elem_type(logits.scalar_type()),
                                      targets.data_ptr<int64_t>(), losses.data_ptr<float>(), lse.data_ptr<float>(),
                                      logits.data_ptr(), scale, N, Vp, V, current_stream());
    loss = losses.mean();
#endif
    return loss;
  }
  check_targets_in_range_cpu(targets, V);
  with_cpu_elem(logits.scalar_type(), [&](auto elem) {
    using T = decltype(elem);
    at::parallel_for(0, N, 1, [&](int64_t begin, int64_t end) {
      cross_entropy_loss_and_grad_rows(begin, end, cpu_data<T>(logits), targets.data_ptr<int64_t>(),
                                       losses.data_ptr<float>(), lse.data_ptr<float>(), scale, Vp, V);
    });
  });
  const float* l = losses.data_ptr<float>();
  double total = 0.0;  // in order, in double: deterministic and exact enough for any N
  for (int64_t i = 0; i < N; ++i) total += l[i];
  return torch::full({}, float(total / double(N)), f32);
}

// ---- autograd: add + LayerNorm ---------------------------------------------------------

namespace {
std::atomic<int64_t> g_add_layer_norm_calls{0};
}  // namespace

int64_t add_layer_norm_calls() { return g_add_layer_norm_calls.load(); }

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
    cuda::add_layer_norm_forward(x.data_ptr<float>(), residual.data_ptr(), elem_type(residual.scalar_type()),
                                 weight.data_ptr<float>(), bias.data_ptr<float>(), s.data_ptr<float>(),
                                 y.data_ptr(), elem_type(y_dtype), mean.data_ptr<float>(), rstd.data_ptr<float>(),
                                 N, C, float(eps), current_stream());
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
    cuda::add_layer_norm_backward(dy.defined() ? dy.data_ptr() : nullptr, elem_type(dy_dtype), data_or_null(ds_in),
                                  s.data_ptr<float>(), weight.data_ptr<float>(), mean.data_ptr<float>(),
                                  rstd.data_ptr<float>(), dx.data_ptr<float>(),
                                  residual_bf16 ? dresidual.data_ptr() : nullptr,
                                  residual_bf16 ? cuda::ElemType::kBFloat16 : cuda::ElemType::kFloat32,
                                  dweight.data_ptr<float>(), dbias.data_ptr<float>(), scratch.data_ptr<float>(), N,
                                  C, current_stream());
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

torch::Tensor cross_entropy_reference(const torch::Tensor& logits, const torch::Tensor& targets,
                                      int64_t valid_vocab) {
  auto real = logits.narrow(1, 0, valid_vocab).to(at::kFloat);  // (N, V)
  return at::cross_entropy_loss(real, targets, /*weight=*/{}, at::Reduction::Mean, /*ignore_index=*/-100,
                                /*label_smoothing=*/0.0);
}

}  // namespace ladder::fused
