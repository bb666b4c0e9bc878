// variants/gemm_sites.h: the GEMMs of a GPT-2 training step that carry a
// cuBLASLt epilogue on CUDA (variants/fused_linear.h), each distinct one once.
//
// A site is one role of one layer kind, the same in every block: c_attn's
// forward (bias), its weight-and-bias gradient, and so on. Its shape is given
// as the row-major op sees it (rows N = B*T, in I, out O) and as the
// column-major GEMM cuBLASLt runs (m, n, k, which operand is transposed),
// exactly as variants/cuda/cublaslt_matmul.cpp lays it out, so that a
// micro-benchmark (bench/micro/gemm_sites.cpp) or a planner can time the very
// GEMM the step runs, and a report can name it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "variants/config.h"

namespace ladder {

enum class GemmRole {
  kForwardBias,      // y (N, O) = x W^T + b              BIAS
  kForwardBiasGelu,  // pre = x W^T + b, h = gelu(pre)    GELU_AUX_BIAS (pre kept as aux)
  kWeightBiasGrad,   // dW (O, I) = dy^T x, db = sum dy   BGRADB
  kInputGradDgelu,   // dpre (N, I) = (dy W) * gelu'(pre)  DGELU (c_fc's db: its kWeightBiasGrad)
};

struct GemmSite {
  std::string layer;  // "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"
  GemmRole role;
  int64_t rows = 0, in = 0, out = 0;  // N, I, O of the linear the role belongs to
  int64_t per_step = 0;               // how many times a step runs it (one per block)

  // cuBLASLt's column-major problem, as cublaslt_matmul.cpp writes it.
  int64_t m() const;
  int64_t n() const;
  int64_t k() const;
  bool transa() const;
  bool transb() const;
  const char* epilogue() const;  // "BIAS", "GELU_AUX_BIAS", "BGRADB", "DGELU"
  const char* role_name() const; // "forward", "forward+gelu", "weight+bias grad", "input grad+dgelu"
  double flops() const { return 2.0 * double(m()) * double(n()) * double(k()); }
  // "mlp.c_fc/forward+gelu" and "mlp.c_fc/forward+gelu m3072 n16384 k768 TN GELU_AUX_BIAS".
  std::string name() const;
  std::string describe() const;
};

// The epilogue GEMMs of a step of `model` over `rows` = B*T tokens with the
// fused rung's parts on (fused-linear, lt-epilogues, gelu-epilogue), in the
// order forward then backward. gelu_epilogue false: c_fc's forward is a BIAS
// GEMM and its input gradient no epilogue GEMM (GELU runs apart).
std::vector<GemmSite> gemm_sites(const ModelConfig& model, int64_t rows, bool gelu_epilogue = true);

}  // namespace ladder
