// variants/cuda/fused_kernels.cu: CUDA kernels for residual add + LayerNorm,
// forward and backward, and the classifier's cross-entropy with its gradient
// (see fused_kernels.h).
//
// LayerNorm: one warp per row, warp-shuffle reductions; weight/bias gradients
// by a deterministic two-stage column reduction. Cross-entropy: one block per
// row, an online (max, sum) softmax in one read of the row (16-byte loads
// where the row allows), block reduction through shared memory. All
// accumulation in float; no ATen headers here.
// The CPU reference for every kernel is in variants/fused_ops.cpp and
// tests/test_fused_ops.cpp compares both against composite ATen ops.
#include "variants/cuda/fused_kernels.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "profiler/common/cuda/cuda_check.h"

namespace ladder::fused::cuda {
namespace {

constexpr int kWarpSize = 32;
constexpr int kLayerNormThreads = 256;  // 8 rows (warps) per block
constexpr int kCrossEntropyThreads = 1024;
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

// ---- add + LayerNorm ---------------------------------------------------------------

// grid: ceil(N / warps per block); block: kLayerNormThreads; one warp per row.
template <typename R, typename Y>
__global__ void __launch_bounds__(kLayerNormThreads)
    add_layer_norm_forward_kernel(const float* __restrict__ x,         // (N, C)
                                  const R* __restrict__ residual,      // (N, C)
                                  const float* __restrict__ weight,    // (C)
                                  const float* __restrict__ bias,      // (C)
                                  float* s,                            // (N, C)
                                  Y* __restrict__ y,                   // (N, C)
                                  float* __restrict__ mean_out,        // (N)
                                  float* __restrict__ rstd_out,        // (N)
                                  int64_t N, int C, float eps) {
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= N) return;  // uniform across the warp, so the shuffles below stay full-mask
  const int64_t offset = row * C;
  const float* x_row = x + offset;
  const R* r_row = residual + offset;
  float* s_row = s + offset;

  float sum = 0.f;
  for (int c = lane; c < C; c += kWarpSize) {
    const float v = x_row[c] + to_float(r_row[c]);
    s_row[c] = v;  // re-read below by this same thread, so no fence is needed
    sum += v;
  }
  const float mean = warp_sum(sum) / C;

  float sq = 0.f;
  for (int c = lane; c < C; c += kWarpSize) {
    const float d = s_row[c] - mean;
    sq += d * d;
  }
  const float rstd = rsqrtf(warp_sum(sq) / C + eps);

  Y* y_row = y + offset;
  for (int c = lane; c < C; c += kWarpSize) y_row[c] = from_float<Y>((s_row[c] - mean) * rstd * weight[c] + bias[c]);
  if (lane == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

// One kernel for the input gradient and the first stage of dweight/dbias, so
// dy and s are read from memory once. grid: ceil(N / kLayerNormRowsPerChunk);
// block: warps * 32, one warp per row; dynamic shared memory warps * 2 * C
// floats, each warp's own dweight/dbias partial sums (when dy is not null).
// Warp w takes rows w, w + warps, ... of its block's chunk, in order; the
// warps' partials are then summed in warp order into partial[block]: the
// result does not depend on scheduling. dy, ds_in, dresidual may be null.
template <typename D, typename R>
__global__ void __launch_bounds__(kLayerNormThreads)
    add_layer_norm_backward_kernel(const D* __restrict__ dy,          // (N, C)
                                   const float* __restrict__ ds_in,   // (N, C)
                                   const float* __restrict__ s,       // (N, C)
                                   const float* __restrict__ weight,  // (C)
                                   const float* __restrict__ mean,    // (N)
                                   const float* __restrict__ rstd,    // (N)
                                   float* __restrict__ dx,            // (N, C)
                                   R* __restrict__ dresidual,         // (N, C)
                                   float* __restrict__ partial,       // (chunks, 2, C)
                                   int64_t N, int C) {
  extern __shared__ float param_sh[];  // (warps, 2, C)
  const int warps = blockDim.x / kWarpSize;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  float* dweight_sh = param_sh + int64_t(warp) * 2 * C;  // this warp's alone until the __syncthreads below
  float* dbias_sh = dweight_sh + C;
  if (dy != nullptr) {
    for (int c = lane; c < C; c += kWarpSize) {
      dweight_sh[c] = 0.f;
      dbias_sh[c] = 0.f;
    }
  }
  const int64_t row_begin = int64_t(blockIdx.x) * kLayerNormRowsPerChunk;
  const int64_t row_end = min(N, row_begin + kLayerNormRowsPerChunk);
  // The row is uniform across the warp, so the shuffles stay full-mask; no
  // thread returns early: all of them reach the __syncthreads below.
  for (int64_t row = row_begin + warp; row < row_end; row += warps) {
    const int64_t offset = row * C;
    const float mu = mean[row], rs = rstd[row];
    float mean_g = 0.f, mean_gx = 0.f;  // mean(g), mean(g * xhat) with g = dy * weight
    if (dy != nullptr) {
      float sum_g = 0.f, sum_gx = 0.f;
      for (int c = lane; c < C; c += kWarpSize) {
        const float g = to_float(dy[offset + c]) * weight[c];
        sum_g += g;
        sum_gx += g * (s[offset + c] - mu) * rs;
      }
      mean_g = warp_sum(sum_g) / C;
      mean_gx = warp_sum(sum_gx) / C;
    }
    for (int c = lane; c < C; c += kWarpSize) {
      float ds = ds_in != nullptr ? ds_in[offset + c] : 0.f;
      if (dy != nullptr) {
        const float d = to_float(dy[offset + c]);
        const float xhat = (s[offset + c] - mu) * rs;
        ds += rs * (d * weight[c] - mean_g - xhat * mean_gx);
        dweight_sh[c] += d * xhat;
        dbias_sh[c] += d;
      }
      dx[offset + c] = ds;
      if (dresidual != nullptr) dresidual[offset + c] = from_float<R>(ds);
    }
  }
  if (dy == nullptr) return;  // uniform across the grid: no partials to write
  __syncthreads();
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float dw = 0.f, db = 0.f;
    for (int w = 0; w < warps; ++w) {
      dw += param_sh[int64_t(w) * 2 * C + c];
      db += param_sh[int64_t(w) * 2 * C + C + c];
    }
    partial[(int64_t(blockIdx.x) * 2 + 0) * C + c] = dw;
    partial[(int64_t(blockIdx.x) * 2 + 1) * C + c] = db;
  }
}

// How many warps (rows at a time) a backward block runs: 8, or fewer where
// their dweight/dbias partials (2 * C floats each) would not fit the 48 KiB
// of shared memory a launch may take without opting in. 0 if not even one.
constexpr int64_t kSharedBytesPerBlock = 48 * 1024;
int backward_warps(int64_t C) {
  const int64_t fit = kSharedBytesPerBlock / (2 * C * int64_t(sizeof(float)));
  return int(fit < kLayerNormThreads / kWarpSize ? fit : kLayerNormThreads / kWarpSize);
}

// Stage 2: sum the chunks' partials in a fixed order. grid: ceil(C / 32);
// block: (32, kFinalRows). Thread (tx, ty) sums chunks ty, ty + kFinalRows,
// ... for column tx in order; row 0 then adds the kFinalRows sums in order.
// Many threads per column, because the chunks are hundreds (N / 32) and one
// thread per column would wait on hundreds of loads in a row.
constexpr int kFinalRows = 32;
__global__ void __launch_bounds__(kWarpSize * kFinalRows)
    add_layer_norm_backward_params_final_kernel(const float* __restrict__ partial,  // (chunks, 2, C)
                                                float* __restrict__ dweight,        // (C)
                                                float* __restrict__ dbias,          // (C)
                                                int64_t chunks, int C) {
  __shared__ float dweight_sh[kFinalRows][kWarpSize + 1];
  __shared__ float dbias_sh[kFinalRows][kWarpSize + 1];
  const int c = blockIdx.x * kWarpSize + threadIdx.x;
  float dw = 0.f, db = 0.f;
  if (c < C) {
    for (int64_t k = threadIdx.y; k < chunks; k += kFinalRows) {
      dw += partial[(k * 2 + 0) * C + c];
      db += partial[(k * 2 + 1) * C + c];
    }
  }
  dweight_sh[threadIdx.y][threadIdx.x] = dw;
  dbias_sh[threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int k = 1; k < kFinalRows; ++k) {
      dw += dweight_sh[k][threadIdx.x];
      db += dbias_sh[k][threadIdx.x];
    }
    dweight[c] = dw;
    dbias[c] = db;
  }
}

// Fills n floats with zero (dweight/dbias when dy is null).
__global__ void fill_zero_kernel(float* __restrict__ out, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.f;
}

// ---- cross-entropy and its gradient ------------------------------------------------

// Merges the softmax state (max m, sum of exp(v - m)) of two sets of values.
__device__ __forceinline__ void merge_softmax_state(float& m, float& sum, float m_other, float sum_other) {
  const float m_new = fmaxf(m, m_other);
  if (m_new == -INFINITY) return;  // both empty (or all -inf): sums are 0
  sum = sum * expf(m - m_new) + sum_other * expf(m_other - m_new);
  m = m_new;
}

// 16-byte packs of logits: a bf16 row is read 8 values per load instead of
// one (fp32: 4), so a warp's load is 512 contiguous bytes rather than 64.
// Taken when the row stride and both pointers allow it (row_packs); a
// padded vocabulary (Vp = 50304 = 8 * 6288) always does.
template <typename T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / int(sizeof(T));
  T v[kSize];
};

// The online softmax state (max m, sum of exp(v - m)) after one more value v.
__device__ __forceinline__ void softmax_state_add(float& m, float& sum, float v) {
  if (v > m) {
    sum = sum * expf(m - v) + 1.f;  // expf(-inf) = 0 on the first value
    m = v;
  } else if (v != -INFINITY) {
    sum += expf(v - m);  // a NaN v makes sum NaN, and so the loss
  }
}

// One column's gradient: (softmax - onehot(t)) * scale over [0, V), exactly 0
// over the padding [V, Vp), which never enters the softmax.
__device__ __forceinline__ float cross_entropy_grad(float logit, int64_t j, int64_t t, float row_lse, float scale,
                                                    int64_t V) {
  return j < V ? (expf(logit - row_lse) - (j == t ? 1.f : 0.f)) * scale : 0.f;
}

// One row's gradient, by the block's threads, over [0, Vp). row_grad may be
// row_logits: each element (or pack) is read, then written, by one thread. A
// target outside [0, V) makes the row NaN over [0, V).
template <bool kPacked, typename T>
__device__ __forceinline__ void write_cross_entropy_grad_row(const T* row_logits, int64_t t, float row_lse,
                                                             float scale, T* row_grad, int64_t Vp, int64_t V) {
  if (!(t >= 0 && t < V)) scale = __int_as_float(0x7fc00000);
  if constexpr (kPacked) {
    constexpr int n = Pack<T>::kSize;
    for (int64_t j0 = int64_t(threadIdx.x) * n; j0 < Vp; j0 += int64_t(blockDim.x) * n) {
      const Pack<T> in = *reinterpret_cast<const Pack<T>*>(row_logits + j0);
      Pack<T> out;
#pragma unroll
      for (int k = 0; k < n; ++k)
        out.v[k] = from_float<T>(cross_entropy_grad(to_float(in.v[k]), j0 + k, t, row_lse, scale, V));
      *reinterpret_cast<Pack<T>*>(row_grad + j0) = out;
    }
  } else {
    for (int64_t j = threadIdx.x; j < Vp; j += blockDim.x)
      row_grad[j] = from_float<T>(cross_entropy_grad(to_float(row_logits[j]), j, t, row_lse, scale, V));
  }
}

// grid: N; block: kCrossEntropyThreads; one block per row. After the loss it
// writes the row's gradient (softmax - onehot) * grad_scale over the row
// (grad may be logits itself): a second pass over a row the first pass has
// just read, so it comes from L2 rather than memory.
template <bool kPacked, typename T>
__global__ void __launch_bounds__(kCrossEntropyThreads)
    cross_entropy_loss_and_grad_kernel(const T* logits,                      // (N, Vp)
                                       const int64_t* __restrict__ targets,  // (N)
                                       float* __restrict__ losses,           // (N)
                                       float* __restrict__ lse,              // (N)
                                       T* grad,                              // (N, Vp), may be logits
                                       float grad_scale, int64_t Vp, int64_t V) {
  __shared__ float m_sh[kCrossEntropyThreads / kWarpSize];
  __shared__ float sum_sh[kCrossEntropyThreads / kWarpSize];
  __shared__ float lse_sh;
  const int64_t row = blockIdx.x;
  const T* row_logits = logits + row * Vp;

  // Online softmax over this thread's strided columns (or packs of them):
  // one read of the row.
  float m = -INFINITY, sum = 0.f;
  if constexpr (kPacked) {
    constexpr int n = Pack<T>::kSize;
    // j0 < V <= Vp and n divides Vp: the pack lies inside the row; its
    // columns at or past V are padding and are skipped.
    for (int64_t j0 = int64_t(threadIdx.x) * n; j0 < V; j0 += int64_t(blockDim.x) * n) {
      const Pack<T> in = *reinterpret_cast<const Pack<T>*>(row_logits + j0);
#pragma unroll
      for (int k = 0; k < n; ++k)
        if (j0 + k < V) softmax_state_add(m, sum, to_float(in.v[k]));
    }
  } else {
    for (int64_t j = threadIdx.x; j < V; j += blockDim.x) softmax_state_add(m, sum, to_float(row_logits[j]));
  }
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) {
    const float m_other = __shfl_xor_sync(kFullMask, m, offset);
    const float sum_other = __shfl_xor_sync(kFullMask, sum, offset);
    merge_softmax_state(m, sum, m_other, sum_other);
  }
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  if (lane == 0) {
    m_sh[warp] = m;
    sum_sh[warp] = sum;
  }
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / kWarpSize;
    m = lane < warps ? m_sh[lane] : -INFINITY;
    sum = lane < warps ? sum_sh[lane] : 0.f;
    for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) {
      const float m_other = __shfl_xor_sync(kFullMask, m, offset);
      const float sum_other = __shfl_xor_sync(kFullMask, sum, offset);
      merge_softmax_state(m, sum, m_other, sum_other);
    }
    if (lane == 0) {
      const float row_lse = m + logf(sum);
      const int64_t t = targets[row];
      const bool valid = t >= 0 && t < V;
      losses[row] = valid ? row_lse - to_float(row_logits[valid ? t : 0]) : __int_as_float(0x7fc00000);
      lse[row] = row_lse;
      lse_sh = row_lse;
    }
  }
  // The target logit was read above, before this barrier; only now is the
  // row overwritten (when grad is logits).
  __syncthreads();
  write_cross_entropy_grad_row<kPacked>(row_logits, targets[row], lse_sh, grad_scale, grad + row * Vp, Vp, V);
}

// Whether rows of Vp values of T at `a` and `b` can be read and written in
// 16-byte packs: every row starts on a 16-byte boundary.
template <typename T>
bool row_packs(const void* a, const void* b, int64_t Vp) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return (Vp * int64_t(sizeof(T))) % 16 == 0 && aligned(a) && aligned(b);
}

template <typename F>
void dispatch_elem_type(ElemType type, const char* what, F&& f) {
  switch (type) {
    case ElemType::kFloat32: f(float{}); return;
    case ElemType::kBFloat16: f(__nv_bfloat16{}); return;
  }
  throw std::invalid_argument(std::string(what) + ": unknown ElemType " + std::to_string(int(type)));
}

unsigned ceil_div(int64_t a, int64_t b) { return unsigned((a + b - 1) / b); }

}  // namespace

void add_layer_norm_forward(const float* x, const void* residual, ElemType residual_type, const float* weight,
                            const float* bias, float* s, void* y, ElemType y_type, float* mean, float* rstd,
                            int64_t N, int64_t C, float eps, cudaStream_t stream) {
  if (N == 0) return;
  const unsigned blocks = ceil_div(N, kLayerNormThreads / kWarpSize);
  dispatch_elem_type(residual_type, "add_layer_norm_forward", [&](auto r_tag) {
    dispatch_elem_type(y_type, "add_layer_norm_forward", [&](auto y_tag) {
      using R = decltype(r_tag);
      using Y = decltype(y_tag);
      add_layer_norm_forward_kernel<R, Y><<<blocks, kLayerNormThreads, 0, stream>>>(
          x, static_cast<const R*>(residual), weight, bias, s, static_cast<Y*>(y), mean, rstd, N, int(C), eps);
    });
  });
  LADDER_CUDA_CHECK(cudaGetLastError());
}

void add_layer_norm_backward(const void* dy, ElemType dy_type, const float* ds_in, const float* s,
                             const float* weight, const float* mean, const float* rstd, float* dx, void* dresidual,
                             ElemType residual_type, float* dweight, float* dbias, float* scratch, int64_t N,
                             int64_t C, cudaStream_t stream) {
  const int warps = backward_warps(C);
  if (warps < 1)
    throw std::invalid_argument("add_layer_norm_backward: C = " + std::to_string(C) + " is over the " +
                                std::to_string(kSharedBytesPerBlock / (2 * sizeof(float))) +
                                " columns whose weight-gradient partials fit a block's shared memory");
  const int64_t chunks = (N + kLayerNormRowsPerChunk - 1) / kLayerNormRowsPerChunk;
  if (chunks > 0) {
    const size_t shared = dy != nullptr ? size_t(warps) * 2 * size_t(C) * sizeof(float) : 0;
    dispatch_elem_type(dy_type, "add_layer_norm_backward", [&](auto d_tag) {
      dispatch_elem_type(residual_type, "add_layer_norm_backward", [&](auto r_tag) {
        using D = decltype(d_tag);
        using R = decltype(r_tag);
        add_layer_norm_backward_kernel<D, R><<<unsigned(chunks), warps * kWarpSize, shared, stream>>>(
            static_cast<const D*>(dy), ds_in, s, weight, mean, rstd, dx, static_cast<R*>(dresidual), scratch, N,
            int(C));
      });
    });
    LADDER_CUDA_CHECK(cudaGetLastError());
  }
  if (dy == nullptr || N == 0) {  // y got no gradient (or there are no rows)
    fill_zero_kernel<<<ceil_div(C, 256), 256, 0, stream>>>(dweight, C);
    LADDER_CUDA_CHECK(cudaGetLastError());
    fill_zero_kernel<<<ceil_div(C, 256), 256, 0, stream>>>(dbias, C);
    LADDER_CUDA_CHECK(cudaGetLastError());
    return;
  }
  add_layer_norm_backward_params_final_kernel<<<ceil_div(C, kWarpSize), dim3(kWarpSize, kFinalRows), 0, stream>>>(
      scratch, dweight, dbias, chunks, int(C));
  LADDER_CUDA_CHECK(cudaGetLastError());
}

void cross_entropy_loss_and_grad(const void* logits, ElemType logits_type, const int64_t* targets, float* losses,
                                 float* lse, void* grad, float grad_scale, int64_t N, int64_t Vp, int64_t V,
                                 cudaStream_t stream) {
  if (N == 0) return;
  dispatch_elem_type(logits_type, "cross_entropy_loss_and_grad", [&](auto tag) {
    using T = decltype(tag);
    auto kernel = row_packs<T>(logits, grad, Vp) ? cross_entropy_loss_and_grad_kernel<true, T>
                                                 : cross_entropy_loss_and_grad_kernel<false, T>;
    kernel<<<unsigned(N), kCrossEntropyThreads, 0, stream>>>(static_cast<const T*>(logits), targets, losses, lse,
                                                             static_cast<T*>(grad), grad_scale, Vp, V);
  });
  LADDER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ladder::fused::cuda
