// variants/ops/cpu_rows.h: the CPU row helpers the fused ops' loops share
// (variants/ops/add_layer_norm/add_layer_norm.cpp, variants/ops/cross_entropy/cross_entropy.cpp): sums over
// independent lanes, a max over integer keys, a branch-free exp, bf16 as raw
// bits, the CPU element type of a dtype, and LADDER_CPU_CLONES, which builds
// a row-range function once per x86-64 ISA level.
//
// CPU: rows split over threads with at::parallel_for, float accumulation.
// Row loops are written so that gcc -O3 vectorises them without -ffast-math:
// sums keep kLanes independent accumulators, max compares integer keys, exp
// is a branch-free polynomial and bf16 moves as raw bits. Note: with
// LibTorch's OpenMP builds at::parallel_for is an inline header that runs in
// parallel only in translation units compiled with -fopenmp; without it the
// rows run serially (still correctly).
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

#include <torch/torch.h>

// The row-range functions are compiled for AVX-512, AVX2+FMA and baseline
// x86-64, picked once at load time (gcc function multi-versioning), so the
// library still runs on any x86-64 while using the wide vectors ATen's own
// kernels use. Elsewhere they are compiled once for the target.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 && defined(__x86_64__) && defined(__linux__)
#define LADDER_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LADDER_CPU_CLONES
#endif

namespace ladder::fused::cpu_rows {

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

}  // namespace ladder::fused::cpu_rows
