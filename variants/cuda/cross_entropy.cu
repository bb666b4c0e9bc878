// variants/cuda/cross_entropy.cu: the CUDA kernel for the classifier's
// cross-entropy and its gradient, in one pass (see cross_entropy.h).
//
// One block per row, an online (max, sum) softmax in one read of the row
// (16-byte loads where the row allows), block reduction through shared
// memory, then the gradient over the row. All accumulation in float; no ATen
// headers here. The CPU implementation is in variants/cross_entropy.cpp and
// tests/test_cross_entropy.cpp compares both against composite ATen ops.
#include "variants/cuda/cross_entropy.h"

#include <cstdint>

#include "variants/cuda/cuda_utils.cuh"

namespace ladder::fused::cuda {
namespace {

constexpr int kCrossEntropyThreads = 1024;

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

}  // namespace

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
