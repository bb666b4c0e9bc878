// variants/cuda/cublaslt_matmul.h: the cuBLASLt GEMMs with epilogues behind
// variants/fused_linear/fused_linear.h. CUDA only (compiled with LADDER_WITH_CUDA).
//
// Every tensor is a contiguous row-major CUDA matrix of one dtype (float32 or
// bfloat16) on the current device, except the float32 gradient (and bias
// gradient) of the *_accumulate calls; outputs are preallocated. Each call is enqueued on the current
// CUDA stream with the current cuBLASLt handle and workspace, and never
// synchronises, so it can be captured in a CUDA graph.
// Accumulation is fp32 (TF32 for float32 inputs when the float32 matmul
// precision allows it, as ATen's own GEMMs).
//
// Each returns false, with the reason in *why_not, when cuBLASLt has no
// algorithm for that epilogue at that shape, dtype and alignment; the caller
// then computes the same result with plain ATen ops. Any other cuBLASLt error
// throws with file:line.
//
// Choosing the algorithm: cuBLASLt's heuristic is asked once per GEMM (shape,
// dtypes, epilogue, alignments, workspace) for up to kMaxLtAlgos algorithms,
// ordered by its estimate of their time, and the list is kept. `algo_rank`
// picks one: 0 (the default) is the heuristic's first, what ATen-style callers
// run; a GEMM planner times the others. A rank the heuristic does not offer
// returns false (why_not says how many it offers). When `used` is not null it
// is filled with what ran: the rank, the algorithm's configuration and the
// workspace; when nothing ran, only rank (the one asked), offered and
// workspace_given are set, and algo_id stays -1.
#pragma once

#include <cstddef>
#include <string>

#include <ATen/ATen.h>

namespace ladder::fused::cuda {

// One of the algorithms cuBLASLt's heuristic offers for a GEMM, as a plan records it.
struct LtAlgoInfo {
  int rank = 0;                 // its place in the heuristic's list (0: the first, what ATen-style callers take)
  int offered = 0;              // how many the heuristic offered for this GEMM (up to kMaxLtAlgos)
  int algo_id = -1;             // CUBLASLT_ALGO_CONFIG_ID
  int tile = -1;                // CUBLASLT_ALGO_CONFIG_TILE_ID (a cublasLtMatmulTile_t)
  std::string tile_name;        // e.g. "128x256", from the tile enum's name;
                                // "undefined" for CUBLASLT_MATMUL_TILE_UNDEFINED
  int stages = -1;              // CUBLASLT_ALGO_CONFIG_STAGES_ID
  int splitk = 1;               // CUBLASLT_ALGO_CONFIG_SPLITK_NUM (1: no split-K)
  int reduction_scheme = 0;     // CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME
  float waves = 0;              // the heuristic result's wavesCount
  size_t workspace_bytes = 0;   // the heuristic result's workspaceSize (what this algorithm needs)
  size_t workspace_given = 0;   // the workspace the call had (torch's or ladder's own)
};
inline constexpr int kMaxLtAlgos = 8;  // how many algorithms the heuristic is asked for

// y (N, O) = x (N, I) W^T + b, W (O, I), b (O). With `pre` defined (N, O),
// the epilogue keeps x W^T + b in `pre` and writes y = gelu_tanh(pre).
bool lt_linear_forward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                       at::Tensor& y, at::Tensor* pre, std::string* why_not, int algo_rank = 0,
                       LtAlgoInfo* used = nullptr);

// dW (O, I) = dy^T (O, N) x (N, I) and db (O) = sum over rows of dy, one GEMM.
bool lt_weight_bias_grad(const at::Tensor& dy, const at::Tensor& x, at::Tensor& dweight, at::Tensor& dbias,
                         std::string* why_not, int algo_rank = 0, LtAlgoInfo* used = nullptr);

// dpre (N, I) = (dy (N, O) W (O, I)) * gelu_tanh'(pre (N, I)), one GEMM
// (DGELU). No bias-gradient reduction: on the H100 (2026-11-27) DGELU_BGRAD's
// took 0.47 ms where DGELU and an fp32 sum took 0.22; c_fc's bias gradient
// comes with its weight gradient instead (lt_weight_bias_grad).
bool lt_input_grad_dgelu(const at::Tensor& dy, const at::Tensor& weight, const at::Tensor& pre, at::Tensor& dpre,
                         std::string* why_not, int algo_rank = 0, LtAlgoInfo* used = nullptr);

// The weight-gradient GEMM without its bias-gradient reduction, for a caller
// that sums the bias gradient apart (in fp32): dW (O, I) = dy^T x (no epilogue).
bool lt_weight_grad(const at::Tensor& dy, const at::Tensor& x, at::Tensor& dweight, std::string* why_not,
                    int algo_rank = 0, LtAlgoInfo* used = nullptr);

// dW (O, I) += dy^T (O, N) x (N, I), with dy and x in bf16 or fp32 and `grad` a contiguous float32 (O, I)
// CUDA tensor updated in place (beta = 1): the weight gradient goes straight into the step's flat fp32
// gradient buffer, without a bf16 dW and the add that reads it again. No bias epilogue. The only call
// here whose output dtype (fp32) can differ from its inputs'.
bool lt_weight_grad_accumulate(const at::Tensor& dy, const at::Tensor& x, at::Tensor& grad, std::string* why_not,
                               int algo_rank = 0, LtAlgoInfo* used = nullptr);
// The same with the BGRADB epilogue: grad (O, I) += dy^T x and dbias (O), a float32 CUDA tensor, = the sum
// over rows of dy, one GEMM (the bias gradient in D's dtype, fp32, as cuBLASLt's default bias type).
bool lt_weight_bias_grad_accumulate(const at::Tensor& dy, const at::Tensor& x, at::Tensor& grad, at::Tensor& dbias,
                                    std::string* why_not, int algo_rank = 0, LtAlgoInfo* used = nullptr);

// The workspace these GEMMs get. 0 (the default): torch's cuBLASLt workspace
// (at::cuda::getCUDABlasLtWorkspace: 1 MiB in torch 2.11 unless the
// CUBLASLT_WORKSPACE_SIZE environment variable says otherwise, in KiB).
// Otherwise a buffer of `bytes` that ladder owns, allocated now on the
// current device and kept (call it outside graph capture; a GEMM on another
// device keeps torch's). The heuristic is asked again for each size.
void set_lt_workspace_bytes(size_t bytes);
// cuBLASLt's version as the library reports it at run time ("130100"), for plan keys.
std::string lt_version();
size_t lt_workspace_bytes();

}  // namespace ladder::fused::cuda
