// variants/ops/cross_entropy/cross_entropy_cuda.cu: the CUDA kernel for the classifier's
// cross-entropy and its gradient, in one pass (see cross_entropy.h).
//
// One block per row, an online (max, sum) softmax in one read of the row
// (16-byte loads where the row allows), block reduction through shared
// memory, then the gradient over the row. All accumulation in float; no ATen
// headers here. The CPU implementation is in variants/ops/cross_entropy/cross_entropy.cpp and
// variants/ops/cross_entropy/test_cross_entropy.cpp compares both against composite ATen ops.
#include "variants/ops/cross_entropy/cross_entropy_cuda.h"

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

// Merges every thread's softmax state (m, s) across the block with Merge
// (merge_softmax_state, or the base-2 merge_softmax2_state below): within
// each warp, then warp 0 over the warps' states through shared memory. On
// return warp 0's lanes hold the block's state; the other warps' are partial.
template <void (*Merge)(float&, float&, float, float)>
__device__ __forceinline__ void block_merge_softmax_state(float& m, float& s) {
  __shared__ float m_sh[kCrossEntropyThreads / kWarpSize];
  __shared__ float s_sh[kCrossEntropyThreads / kWarpSize];
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1)
    Merge(m, s, __shfl_xor_sync(kFullMask, m, offset), __shfl_xor_sync(kFullMask, s, offset));
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  if (lane == 0) {
    m_sh[warp] = m;
    s_sh[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / kWarpSize;
    m = lane < warps ? m_sh[lane] : -INFINITY;
    s = lane < warps ? s_sh[lane] : 0.f;
    for (int offset = kWarpSize / 2; offset > 0; offset >>= 1)
      Merge(m, s, __shfl_xor_sync(kFullMask, m, offset), __shfl_xor_sync(kFullMask, s, offset));
  }
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
  block_merge_softmax_state<merge_softmax_state>(m, sum);
  if (threadIdx.x == 0) {
    const float row_lse = m + logf(sum);
    const int64_t t = targets[row];
    const bool valid = t >= 0 && t < V;
    losses[row] = valid ? row_lse - to_float(row_logits[valid ? t : 0]) : __int_as_float(0x7fc00000);
    lse[row] = row_lse;
    lse_sh = row_lse;
  }
  // The target logit was read above, before this barrier; only now is the
  // row overwritten (when grad is logits).
  __syncthreads();
  write_cross_entropy_grad_row<kPacked>(row_logits, targets[row], lse_sh, grad_scale, grad + row * Vp, Vp, V);
}

// ---- the batched kernel: fewer instructions a logit --------------------------------------
//
// The kernel above issues about 18 instructions a logit in its first pass and
// 26 in its second (SASS, sm_90, bf16 packs): per value a branch, a 64-bit
// column compare and expf's range reduction. At 16384 x 50304 bf16 that is
// about as many instructions as an H100 issues in the time it moves the bytes,
// and it took 2.04 ms a call there on 2026-11-27 (about 1.6 TB/s). This one
// takes a batch of values at a time (a 16-byte pack, or kBatch strided
// values): their max, one rescale of the running sum, and exp as
// 2^(v log2(e) - M), one FFMA and one MUFU.EX2 a value; the gradient pass
// finds the target's column once a batch. The state is in base 2: M the
// running max times log2(e), S the sum of 2^(v log2(e) - M).

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr int kBatch = 4;  // strided values a batch where the row is not read in packs

// 2^x in one MUFU.EX2 (about 2 ulp), results below 2^-126 flushed to 0:
// exp2f adds a compare and two multiplies a value to keep such subnormals,
// terms that cannot move a sum whose largest term is 1.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The base-2 state after n more values (padding passed as -inf). A NaN is
// skipped by the max and reaches S through its term, so the loss is NaN.
template <int n>
__device__ __forceinline__ void softmax2_state_add(float& M, float& S, const float (&f)[n]) {
  float pm = f[0];
#pragma unroll
  for (int k = 1; k < n; ++k) pm = fmaxf(pm, f[k]);
  const float M_new = fmaxf(M, pm * kLog2e);
  // Every value so far -inf: shift by 0, so that their terms are 2^-inf = 0, not NaN.
  const float ref = M_new == -INFINITY ? 0.f : M_new;
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < n; ++k) s += exp2_ftz(fmaf(f[k], kLog2e, -ref));
  S = S * exp2_ftz(M - ref) + s;
  M = M_new;
}

// Merges another base-2 state (M_o, S_o) into (M, S).
__device__ __forceinline__ void merge_softmax2_state(float& M, float& S, float M_o, float S_o) {
  const float M_new = fmaxf(M, M_o);
  if (M_new == -INFINITY) {  // both empty or all -inf: the sums are 0 (or NaN, kept)
    S += S_o;
    return;
  }
  S = S * exp2_ftz(M - M_new) + S_o * exp2_ftz(M_o - M_new);
  M = M_new;
}

// The row's base-2 logsumexp, M + log2(S) over every thread's state, returned
// to every thread of the block (two barriers).
__device__ __forceinline__ float block_logsumexp2(float M, float S) {
  __shared__ float lse2_sh;
  block_merge_softmax_state<merge_softmax2_state>(M, S);
  if (threadIdx.x == 0) lse2_sh = M + log2f(S);
  __syncthreads();
  return lse2_sh;
}

// The row's first pass: this thread's base-2 state over [0, V).
template <bool kPacked, typename T>
__device__ __forceinline__ void row_softmax2_state(const T* row_logits, int64_t V, float& M, float& S) {
  if constexpr (kPacked) {
    constexpr int n = Pack<T>::kSize;
#pragma unroll 2
    for (int64_t j0 = int64_t(threadIdx.x) * n; j0 < V; j0 += int64_t(blockDim.x) * n) {
      const Pack<T> in = *reinterpret_cast<const Pack<T>*>(row_logits + j0);
      float f[n];
#pragma unroll
      for (int k = 0; k < n; ++k) f[k] = to_float(in.v[k]);
      if (j0 + n > V) {  // the pack where the padding starts
#pragma unroll
        for (int k = 0; k < n; ++k)
          if (j0 + k >= V) f[k] = -INFINITY;
      }
      softmax2_state_add(M, S, f);
    }
  } else {
    for (int64_t j = threadIdx.x; j < V; j += int64_t(blockDim.x) * kBatch) {
      float f[kBatch];
#pragma unroll
      for (int k = 0; k < kBatch; ++k) {
        const int64_t jk = j + int64_t(k) * blockDim.x;
        f[k] = jk < V ? to_float(row_logits[jk]) : -INFINITY;
      }
      softmax2_state_add(M, S, f);
    }
  }
}

// The row's gradient, (softmax - onehot(t)) * scale over [0, V) and 0 over
// [V, Vp), with softmax = 2^(v log2(e) - lse2). row_grad may be row_logits:
// each element (or pack) is read, then written, by one thread.
template <bool kPacked, typename T>
__device__ __forceinline__ void write_cross_entropy_grad_row2(const T* row_logits, int64_t t, float lse2,
                                                              float scale, T* row_grad, int64_t Vp, int64_t V) {
  if constexpr (kPacked) {
    constexpr int n = Pack<T>::kSize;
#pragma unroll 1  // unrolled, the 32-register cap split the second copy's 16-byte store in four
    for (int64_t j0 = int64_t(threadIdx.x) * n; j0 < Vp; j0 += int64_t(blockDim.x) * n) {
      const Pack<T> in = *reinterpret_cast<const Pack<T>*>(row_logits + j0);
      const int64_t d = t - j0;
      const int target_k = d >= 0 && d < n ? int(d) : -1;  // the target's place in this pack, if there
      Pack<T> out;
#pragma unroll
      for (int k = 0; k < n; ++k) {
        const float p = exp2_ftz(fmaf(to_float(in.v[k]), kLog2e, -lse2));
        out.v[k] = from_float<T>((k == target_k ? p - 1.f : p) * scale);
      }
      if (j0 + n > V) {
#pragma unroll
        for (int k = 0; k < n; ++k)
          if (j0 + k >= V) out.v[k] = from_float<T>(0.f);
      }
      *reinterpret_cast<Pack<T>*>(row_grad + j0) = out;
    }
  } else {
    for (int64_t j = threadIdx.x; j < Vp; j += blockDim.x) {
      const float p = exp2_ftz(fmaf(to_float(row_logits[j]), kLog2e, -lse2));
      row_grad[j] = from_float<T>(j < V ? (j == t ? p - 1.f : p) * scale : 0.f);
    }
  }
}

// Two blocks an SM (32 registers a thread), as the kernel above gets at 30;
// sm_86/87/89 run 1536 threads an SM, so one.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890)
constexpr int kCrossEntropyBlocksPerSm = 1;
#else
constexpr int kCrossEntropyBlocksPerSm = 2;
#endif

// grid: N; block: kCrossEntropyThreads; one block per row, as the kernel
// above, with the batched passes.
template <bool kPacked, typename T>
__global__ void __launch_bounds__(kCrossEntropyThreads, kCrossEntropyBlocksPerSm)
    cross_entropy_loss_and_grad_batched_kernel(const T* logits,                      // (N, Vp)
                                               const int64_t* __restrict__ targets,  // (N)
                                               float* __restrict__ losses,           // (N)
                                               float* __restrict__ lse,              // (N)
                                               T* grad,                              // (N, Vp), may be logits
                                               float grad_scale, int64_t Vp, int64_t V) {
  const int64_t row = blockIdx.x;
  const T* row_logits = logits + row * Vp;
  const int64_t t = targets[row];
  const bool valid = t >= 0 && t < V;
  // Read before the barriers in block_logsumexp2, so before the row is overwritten.
  const float target_logit = threadIdx.x == 0 && valid ? to_float(row_logits[t]) : 0.f;
  float M = -INFINITY, S = 0.f;
  row_softmax2_state<kPacked>(row_logits, V, M, S);
  const float lse2 = block_logsumexp2(M, S);
  if (threadIdx.x == 0) {
    const float row_lse = lse2 * kLn2;
    losses[row] = valid ? row_lse - target_logit : __int_as_float(0x7fc00000);
    lse[row] = row_lse;
  }
  const float scale = valid ? grad_scale : __int_as_float(0x7fc00000);  // a bad target: NaN over [0, V)
  write_cross_entropy_grad_row2<kPacked>(row_logits, t, lse2, scale, grad + row * Vp, Vp, V);
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
                                 cudaStream_t stream, bool batched) {
  if (N == 0) return;
  dispatch_elem_type(logits_type, "cross_entropy_loss_and_grad", [&](auto tag) {
    using T = decltype(tag);
    const bool packs = row_packs<T>(logits, grad, Vp);
    auto kernel = batched ? (packs ? cross_entropy_loss_and_grad_batched_kernel<true, T>
                                   : cross_entropy_loss_and_grad_batched_kernel<false, T>)
                          : (packs ? cross_entropy_loss_and_grad_kernel<true, T>
                                   : cross_entropy_loss_and_grad_kernel<false, T>);
    kernel<<<unsigned(N), kCrossEntropyThreads, 0, stream>>>(static_cast<const T*>(logits), targets, losses, lse,
                                                             static_cast<T*>(grad), grad_scale, Vp, V);
  });
  LADDER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ladder::fused::cuda
