// variants/ops/add_layer_norm/add_layer_norm_cuda.cu: CUDA kernels for residual add +
// LayerNorm, forward and backward (see add_layer_norm.h).
//
// One warp per row, warp-shuffle reductions; weight/bias gradients by a
// deterministic two-stage column reduction. All accumulation in float; no
// ATen headers here. The CPU implementation is in variants/ops/add_layer_norm/add_layer_norm.cpp
// and variants/ops/add_layer_norm/test_add_layer_norm.cpp compares both against composite ATen ops.
#include "variants/ops/add_layer_norm/add_layer_norm_cuda.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "variants/cuda/cuda_utils.cuh"

namespace ladder::fused::cuda {
namespace {

constexpr int kLayerNormThreads = 256;  // 8 rows (warps) per block

// One row of the forward pass, by one warp, with the row access: one
// element per lane per instruction; s is written, then re-read by the same
// thread (no fence needed). Returns the row's mean and rstd.
template <typename R, typename Y>
__device__ __forceinline__ float2 add_layer_norm_forward_row(const float* __restrict__ x, const R* __restrict__ residual,
                                                             const float* __restrict__ weight,
                                                             const float* __restrict__ bias, float* s,
                                                             Y* __restrict__ y, int64_t offset, int C, float eps,
                                                             int lane) {
  const float* x_row = x + offset;
  const R* r_row = residual + offset;
  float* s_row = s + offset;

  float sum = 0.f;
  for (int c = lane; c < C; c += kWarpSize) {
    const float v = x_row[c] + to_float(r_row[c]);
    s_row[c] = v;
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
  return make_float2(mean, rstd);
}

// The end of the backward kernel, after its __syncthreads: the warps'
// dweight/dbias partials in shared memory (warps, 2, C), summed in warp order
// into this block's partial[blockIdx.x] (2, C).
__device__ __forceinline__ void sum_warp_partials(const float* param_sh, float* __restrict__ partial, int warps,
                                                  int C) {
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

// ---- two accesses to a row, one kernel each way ----------------------------
//
// Each kernel runs its rows with one of two accesses, chosen at launch by its
// kMaxVecs (dispatch_vecs). The row access (kMaxVecs 0) loads one element per
// lane per instruction and reads a row of s (and dy) twice; on the H100 its
// backward moved about half of the bytes per second the GPU can (2026-11-27:
// 0.126 ms a call at 16384 x 768, where torch.compile's LayerNorm backward
// took 0.071). The vector access takes four elements per access (16 bytes of
// float, 8 of bf16) and keeps the row in registers between the passes, so
// each byte is read from memory once. Lane l owns the columns 4v .. 4v + 3 of
// the vectors v = l, l + 32, ..., so C must be a multiple of 4 and at most
// 4 * 32 * kMaxVecs (what vecs_per_lane checks; vec4_aligned the pointers'
// alignment). The arithmetic per element is the same; only the order of the
// row's sums differs.

// Four consecutive elements, loaded or stored as one access.
template <typename T>
struct alignas(4 * sizeof(T)) Vec4 {
  T v[4];
};

template <typename T>
__device__ __forceinline__ void load4(const T* p, float (&out)[4]) {
  const Vec4<T> q = *reinterpret_cast<const Vec4<T>*>(p);
#pragma unroll
  for (int k = 0; k < 4; ++k) out[k] = to_float(q.v[k]);
}

template <typename T>
__device__ __forceinline__ void store4(T* p, const float (&in)[4]) {
  Vec4<T> q;
#pragma unroll
  for (int k = 0; k < 4; ++k) q.v[k] = from_float<T>(in[k]);
  *reinterpret_cast<Vec4<T>*>(p) = q;
}

// One row of the forward pass, by one warp, with the vector access.
template <typename R, typename Y, int kMaxVecs>
__device__ __forceinline__ float2 add_layer_norm_forward_vec_row(const float* __restrict__ x,
                                                                 const R* __restrict__ residual,
                                                                 const float* __restrict__ weight,
                                                                 const float* __restrict__ bias,
                                                                 float* __restrict__ s, Y* __restrict__ y,
                                                                 int64_t offset, int C, float eps, int lane) {
  float v[kMaxVecs][4];  // this lane's share of s's row
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < kMaxVecs; ++i) {
    const int c = (lane + i * kWarpSize) * 4;
    if (c < C) {
      float a[4], r[4];
      load4(x + offset + c, a);
      load4(residual + offset + c, r);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        v[i][k] = a[k] + r[k];
        sum += v[i][k];
      }
      store4(s + offset + c, v[i]);
    }
  }
  const float mean = warp_sum(sum) / C;
  float sq = 0.f;
#pragma unroll
  for (int i = 0; i < kMaxVecs; ++i) {
    if ((lane + i * kWarpSize) * 4 < C) {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float d = v[i][k] - mean;
        sq += d * d;
      }
    }
  }
  const float rstd = rsqrtf(warp_sum(sq) / C + eps);
#pragma unroll
  for (int i = 0; i < kMaxVecs; ++i) {
    const int c = (lane + i * kWarpSize) * 4;
    if (c < C) {
      float w[4], b[4], out[4];
      load4(weight + c, w);
      load4(bias + c, b);
#pragma unroll
      for (int k = 0; k < 4; ++k) out[k] = (v[i][k] - mean) * rstd * w[k] + b[k];
      store4(y + offset + c, out);
    }
  }
  return make_float2(mean, rstd);
}

// The forward kernel, with the row access (kMaxVecs 0) or the vector access.
// grid: ceil(N / warps per block); block: kLayerNormThreads; one warp per row.
template <typename R, typename Y, int kMaxVecs>
__global__ void __launch_bounds__(kLayerNormThreads)
    add_layer_norm_forward_kernel(const float* __restrict__ x,       // (N, C)
                                  const R* __restrict__ residual,    // (N, C)
                                  const float* __restrict__ weight,  // (C)
                                  const float* __restrict__ bias,    // (C)
                                  float* s,                          // (N, C)
                                  Y* __restrict__ y,                 // (N, C)
                                  float* __restrict__ mean_out,      // (N)
                                  float* __restrict__ rstd_out,      // (N)
                                  int64_t N, int C, float eps) {
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= N) return;  // uniform across the warp, so the shuffles below stay full-mask
  float2 stats;
  if constexpr (kMaxVecs == 0) {
    stats = add_layer_norm_forward_row(x, residual, weight, bias, s, y, row * C, C, eps, lane);
  } else {
    stats = add_layer_norm_forward_vec_row<R, Y, kMaxVecs>(x, residual, weight, bias, s, y, row * C, C, eps, lane);
  }
  if (lane == 0) {
    mean_out[row] = stats.x;
    rstd_out[row] = stats.y;
  }
}

// One row of the backward pass, by one warp, with the vector access: ds into
// dx (and dresidual), and the row's dy * xhat and dy added into this warp's
// dweight/dbias partials (each lane its own columns: 4v .. 4v + 3 of its
// vectors v).
template <typename D, typename R, int kMaxVecs>
__device__ __forceinline__ void add_layer_norm_backward_vec_row(
    const D* __restrict__ dy, const float* __restrict__ ds_in, const float* __restrict__ s,
    const float* __restrict__ weight, float mu, float rs, float* __restrict__ dx, R* __restrict__ dresidual,
    float* dweight_sh, float* dbias_sh, int64_t offset, int C, int lane) {
  Vec4<D> dv[kMaxVecs];               // this lane's dy of the row, as loaded (bf16: half the registers)
  float xhat[kMaxVecs][4];            // and its xhat
  float mean_g = 0.f, mean_gx = 0.f;  // mean(g), mean(g * xhat) with g = dy * weight
  if (dy != nullptr) {
    float sum_g = 0.f, sum_gx = 0.f;
#pragma unroll
    for (int i = 0; i < kMaxVecs; ++i) {
      const int c = (lane + i * kWarpSize) * 4;
      if (c < C) {
        float sv[4], w[4];
        load4(s + offset + c, sv);
        dv[i] = *reinterpret_cast<const Vec4<D>*>(dy + offset + c);
        load4(weight + c, w);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          xhat[i][k] = (sv[k] - mu) * rs;
          const float g = to_float(dv[i].v[k]) * w[k];
          sum_g += g;
          sum_gx += g * xhat[i][k];
        }
      }
    }
    mean_g = warp_sum(sum_g) / C;
    mean_gx = warp_sum(sum_gx) / C;
  }
#pragma unroll
  for (int i = 0; i < kMaxVecs; ++i) {
    const int c = (lane + i * kWarpSize) * 4;
    if (c < C) {
      float ds[4] = {0.f, 0.f, 0.f, 0.f};
      if (ds_in != nullptr) load4(ds_in + offset + c, ds);
      if (dy != nullptr) {
        // The partials move as one 16-byte access a lane: the warp's 512
        // bytes in four conflict-free phases. Element by element, lane l's
        // stride of 4 floats would put 4 lanes on each bank.
        float w[4], dw[4], db[4];
        load4(weight + c, w);
        load4(dweight_sh + c, dw);
        load4(dbias_sh + c, db);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const float d = to_float(dv[i].v[k]);
          ds[k] += rs * (d * w[k] - mean_g - xhat[i][k] * mean_gx);
          dw[k] += d * xhat[i][k];
          db[k] += d;
        }
        store4(dweight_sh + c, dw);
        store4(dbias_sh + c, db);
      }
      store4(dx + offset + c, ds);
      if (dresidual != nullptr) store4(dresidual + offset + c, ds);
    }
  }
}

// The same row with the row access: lane l owns the columns l, l + 32, ...;
// dy and s are read twice.
template <typename D, typename R>
__device__ __forceinline__ void add_layer_norm_backward_row(const D* __restrict__ dy, const float* __restrict__ ds_in,
                                                            const float* __restrict__ s,
                                                            const float* __restrict__ weight, float mu, float rs,
                                                            float* __restrict__ dx, R* __restrict__ dresidual,
                                                            float* dweight_sh, float* dbias_sh, int64_t offset, int C,
                                                            int lane) {
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

// Zeroes this warp's dweight/dbias partials, each lane the columns it owns
// under the access kMaxVecs names (0: the row access).
template <int kMaxVecs>
__device__ __forceinline__ void zero_warp_partials(float* dweight_sh, float* dbias_sh, int C, int lane) {
  if constexpr (kMaxVecs == 0) {
    for (int c = lane; c < C; c += kWarpSize) {
      dweight_sh[c] = 0.f;
      dbias_sh[c] = 0.f;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kMaxVecs; ++i) {
      const int c = (lane + i * kWarpSize) * 4;
      if (c < C) {
        const float zero[4] = {0.f, 0.f, 0.f, 0.f};
        store4(dweight_sh + c, zero);
        store4(dbias_sh + c, zero);
      }
    }
  }
}

// The backward kernel's registers are held, up to GPT-2 medium's width
// (kMaxVecs <= 8, and the row access), to what lets as many blocks fit an SM
// as the shared memory does (a block takes 48 KiB at C = 768): on sm_90
// (228 KiB) four, at 64 registers, so the 512 chunks of a 16384-row step run
// in one wave on an H100's 132 SMs, not in two (at 80 registers, three fit);
// on sm_80 (164 KiB) three; on sm_86/89 (100 KiB) two, where a cap of four
// would only add spills. Unbounded, the row access took 96 registers (two
// blocks an SM) with a float dy on sm_90; bounded, 47 and no spills (ptxas -v).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890)
constexpr int kBackwardVecBlocksPerSm = 2;
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 800
constexpr int kBackwardVecBlocksPerSm = 3;
#else
constexpr int kBackwardVecBlocksPerSm = 4;
#endif
constexpr int backward_min_blocks(int max_vecs) {
  return max_vecs <= 8 ? kBackwardVecBlocksPerSm : 1;
}

// One kernel for the input gradient and the first stage of dweight/dbias, so
// dy and s are read from memory once, with the row access (kMaxVecs 0) or
// the vector access; both sum in the same order, so dweight and dbias come
// out the same. grid: ceil(N / kLayerNormRowsPerChunk); block: warps * 32,
// one warp per row; dynamic shared memory warps * 2 * C floats, each warp's
// own dweight/dbias partial sums (when dy is not null). Warp w takes rows w,
// w + warps, ... of its block's chunk, in order; the warps' partials are then
// summed in warp order into partial[block]: the result does not depend on
// scheduling. dy, ds_in, dresidual may be null.
template <typename D, typename R, int kMaxVecs>
__global__ void __launch_bounds__(kLayerNormThreads, backward_min_blocks(kMaxVecs))
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
  extern __shared__ __align__(16) float param_sh[];  // (warps, 2, C)
  const int warps = blockDim.x / kWarpSize;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  // This warp's partials; each lane reads and writes only its own columns,
  // so nothing is shared until the __syncthreads below.
  float* dweight_sh = param_sh + int64_t(warp) * 2 * C;
  float* dbias_sh = dweight_sh + C;
  if (dy != nullptr) zero_warp_partials<kMaxVecs>(dweight_sh, dbias_sh, C, lane);
  const int64_t row_begin = int64_t(blockIdx.x) * kLayerNormRowsPerChunk;
  const int64_t row_end = min(N, row_begin + kLayerNormRowsPerChunk);
  // The row is uniform across the warp, so the shuffles stay full-mask; no
  // thread returns early: all of them reach the __syncthreads below.
  for (int64_t row = row_begin + warp; row < row_end; row += warps) {
    if constexpr (kMaxVecs == 0) {
      add_layer_norm_backward_row<D, R>(dy, ds_in, s, weight, mean[row], rstd[row], dx, dresidual, dweight_sh,
                                        dbias_sh, row * C, C, lane);
    } else {
      add_layer_norm_backward_vec_row<D, R, kMaxVecs>(dy, ds_in, s, weight, mean[row], rstd[row], dx, dresidual,
                                                      dweight_sh, dbias_sh, row * C, C, lane);
    }
  }
  if (dy == nullptr) return;  // uniform across the grid: no partials to write
  __syncthreads();
  sum_warp_partials(param_sh, partial, warps, C);
}

// The vectors (4 elements) each lane takes at width C: 0 where the vector
// kernels cannot run it (C not a multiple of 4, or wider than 4 * 32 * 16).
constexpr int kMaxVecsPerLane = 16;
int vecs_per_lane(int64_t C) {
  if (C <= 0 || C % 4 != 0) return 0;
  const int64_t per_lane = (C / 4 + kWarpSize - 1) / kWarpSize;
  return per_lane <= kMaxVecsPerLane ? int(per_lane) : 0;
}

// Whether p is aligned for a Vec4 of its type (null: nothing to access).
template <typename T>
bool vec4_aligned(const T* p) {
  return reinterpret_cast<std::uintptr_t>(p) % (4 * sizeof(T)) == 0;
}

// Calls f with std::integral_constant<int, K>: 0 (the row access) when
// per_lane is 0, else the smallest instantiated kMaxVecs K >= per_lane (6 is
// GPT-2 small's 768 exactly, so its registers hold no unused vectors).
template <typename F>
void dispatch_vecs(int per_lane, F&& f) {
  if (per_lane == 0) {
    f(std::integral_constant<int, 0>{});
  } else if (per_lane <= 6) {
    f(std::integral_constant<int, 6>{});
  } else if (per_lane <= 8) {
    f(std::integral_constant<int, 8>{});
  } else {
    f(std::integral_constant<int, kMaxVecsPerLane>{});
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

}  // namespace

bool add_layer_norm_forward(const float* x, const void* residual, ElemType residual_type, const float* weight,
                            const float* bias, float* s, void* y, ElemType y_type, float* mean, float* rstd,
                            int64_t N, int64_t C, float eps, cudaStream_t stream, bool allow_vector) {
  if (N == 0) return false;
  const unsigned blocks = ceil_div(N, kLayerNormThreads / kWarpSize);
  const int per_lane = allow_vector ? vecs_per_lane(C) : 0;
  bool vector = false;
  dispatch_elem_type(residual_type, "add_layer_norm_forward", [&](auto r_tag) {
    dispatch_elem_type(y_type, "add_layer_norm_forward", [&](auto y_tag) {
      using R = decltype(r_tag);
      using Y = decltype(y_tag);
      const auto* r = static_cast<const R*>(residual);
      auto* yt = static_cast<Y*>(y);
      vector = per_lane > 0 && vec4_aligned(x) && vec4_aligned(r) && vec4_aligned(weight) && vec4_aligned(bias) &&
               vec4_aligned(s) && vec4_aligned(yt);
      dispatch_vecs(vector ? per_lane : 0, [&](auto vecs) {
        add_layer_norm_forward_kernel<R, Y, decltype(vecs)::value>
            <<<blocks, kLayerNormThreads, 0, stream>>>(x, r, weight, bias, s, yt, mean, rstd, N, int(C), eps);
      });
    });
  });
  LADDER_CUDA_CHECK(cudaGetLastError());
  return vector;
}

bool add_layer_norm_backward(const void* dy, ElemType dy_type, const float* ds_in, const float* s,
                             const float* weight, const float* mean, const float* rstd, float* dx, void* dresidual,
                             ElemType residual_type, float* dweight, float* dbias, float* scratch, int64_t N,
                             int64_t C, cudaStream_t stream, bool allow_vector) {
  const int warps = backward_warps(C);
  if (warps < 1)
    throw std::invalid_argument("add_layer_norm_backward: C = " + std::to_string(C) + " is over the " +
                                std::to_string(kSharedBytesPerBlock / (2 * sizeof(float))) +
                                " columns whose weight-gradient partials fit a block's shared memory");
  const int64_t chunks = (N + kLayerNormRowsPerChunk - 1) / kLayerNormRowsPerChunk;
  const int per_lane = allow_vector ? vecs_per_lane(C) : 0;
  bool vector = false;
  if (chunks > 0) {
    const size_t shared = dy != nullptr ? size_t(warps) * 2 * size_t(C) * sizeof(float) : 0;
    dispatch_elem_type(dy_type, "add_layer_norm_backward", [&](auto d_tag) {
      dispatch_elem_type(residual_type, "add_layer_norm_backward", [&](auto r_tag) {
        using D = decltype(d_tag);
        using R = decltype(r_tag);
        const auto* d = static_cast<const D*>(dy);
        auto* dr = static_cast<R*>(dresidual);
        vector = per_lane > 0 && vec4_aligned(d) && vec4_aligned(ds_in) && vec4_aligned(s) && vec4_aligned(weight) &&
                 vec4_aligned(dx) && vec4_aligned(dr);
        dispatch_vecs(vector ? per_lane : 0, [&](auto vecs) {
          add_layer_norm_backward_kernel<D, R, decltype(vecs)::value>
              <<<unsigned(chunks), warps * kWarpSize, shared, stream>>>(d, ds_in, s, weight, mean, rstd, dx, dr,
                                                                        scratch, N, int(C));
        });
      });
    });
    LADDER_CUDA_CHECK(cudaGetLastError());
  }
  if (dy == nullptr || N == 0) {  // y got no gradient (or there are no rows)
    fill_zero_kernel<<<ceil_div(C, 256), 256, 0, stream>>>(dweight, C);
    LADDER_CUDA_CHECK(cudaGetLastError());
    fill_zero_kernel<<<ceil_div(C, 256), 256, 0, stream>>>(dbias, C);
    LADDER_CUDA_CHECK(cudaGetLastError());
    return vector;
  }
  add_layer_norm_backward_params_final_kernel<<<ceil_div(C, kWarpSize), dim3(kWarpSize, kFinalRows), 0, stream>>>(
      scratch, dweight, dbias, chunks, int(C));
  LADDER_CUDA_CHECK(cudaGetLastError());
  return vector;
}

}  // namespace ladder::fused::cuda
