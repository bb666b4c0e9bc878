// variants/planners/gemm_sites.h: the GEMMs of a GPT-2 training step, declared once
// (step_gemms), and the same GEMMs as the GEMM planner sees them: sites, each
// distinct one once, with the role each plays in the fused linears
// (variants/fused_linear/fused_linear.h) and, on CUDA, its cuBLASLt epilogue.
//
// A site is one role of one layer kind, the same in every block: c_attn's
// forward (bias), its weight-and-bias gradient, and so on. Its shape is given
// as the row-major op sees it (rows N = B*T, in I, out O) and as the
// column-major GEMM cuBLASLt runs (m, n, k, which operand is transposed),
// exactly as variants/cuda/cublaslt_matmul.cpp lays it out, so that a
// micro-benchmark (variants/fused_linear/gemm_sites_micro.cpp) or a planner can time the very
// GEMM the step runs, and a report can name it. The speed-of-light work model
// (add_gemm_work) and the planner (step_sites, gemm_sites) both read
// step_gemms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "variants/config/model_config.h"
#include "variants/ops/work.h"

namespace ladder {

enum class GemmRole {
  kForwardBias,      // y (N, O) = x W^T + b              BIAS
  kForwardBiasGelu,  // pre = x W^T + b, h = gelu(pre)    GELU_AUX_BIAS (pre kept as aux)
  kWeightBiasGrad,   // dW (O, I) = dy^T x, db = sum dy   BGRADB
  kInputGradDgelu,   // dpre (N, I) = (dy W) * gelu'(pre)  DGELU (c_fc's db: its kWeightBiasGrad)
  // The GEMMs without an epilogue (planned on a CPU; ATen's on CUDA):
  kForward,     // y (N, O) = x W^T, no bias (the classifier's logits)
  kInputGrad,   // dx (N, I) = dy W
  kWeightGrad,  // dW (O, I) = dy^T x, no bias (the classifier's)
};
// The four roles above that carry a cuBLASLt epilogue on CUDA.
bool has_epilogue(GemmRole role);

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
  const char* epilogue() const;  // "BIAS", "GELU_AUX_BIAS", "BGRADB", "DGELU", "DEFAULT" (none)
  // "forward", "forward+gelu", "weight+bias grad", "input grad+dgelu",
  // "forward" (no bias), "input grad", "weight grad"
  const char* role_name() const;
  double flops() const { return 2.0 * double(m()) * double(n()) * double(k()); }
  // "mlp.c_fc/forward+gelu" and "mlp.c_fc/forward+gelu m3072 n16384 k768 TN GELU_AUX_BIAS".
  std::string name() const;
  std::string describe() const;
};

// Every GEMM of a training step, each distinct one once: per block the four
// linears' forward, input gradient and weight gradient, and the classifier
// (lm_head, tied to wte, no bias) once a micro-step; in the order forward,
// then backward as autograd reaches them. Shapes as the row-major op sees
// them: rows N = B*T, in I, out O (the classifier's O is the model's
// vocabulary Vp). The speed-of-light work model counts each site's work
// from it (add_gemm_work).
enum class GemmPass { kForward, kInputGrad, kWeightGrad };

struct StepGemm {
  std::string layer;  // "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj", "lm_head"
  GemmPass pass;
  int64_t rows = 0, in = 0, out = 0;
  int64_t per_micro_step = 0;  // n_layer for a block's, 1 for the classifier's
  bool bias = false;
  double flops() const { return 2.0 * double(rows) * double(in) * double(out); }
  const char* pass_name() const;  // "forward", "input grad", "weight grad"
  std::string name() const;       // "mlp.c_fc/weight grad"
};

std::vector<StepGemm> step_gemms(const ModelConfig& model, int64_t rows, int64_t model_vocab);

// A step GEMM as a site of the fused linears: its role (with gelu_epilogue,
// c_fc's forward is forward+gelu and c_proj's input gradient input
// grad+dgelu; a biased weight gradient is weight+bias grad).
GemmSite site_of(const StepGemm& g, bool gelu_epilogue);

// Every GEMM of a step of `model` over `rows` = B*T tokens as a site, each
// distinct one once (step_gemms), in the order the fused ops run them:
// forward, then backward with each layer's weight gradient before its input
// gradient (linear_bias and mlp_gelu's backward). The CPU planner's sites.
std::vector<GemmSite> step_sites(const ModelConfig& model, int64_t rows, int64_t model_vocab,
                                 bool gelu_epilogue = true);

// The epilogue GEMMs among them (has_epilogue), with the fused rung's parts
// on (fused-linear, lt-epilogues, gelu-epilogue): the CUDA planner's sites.
// gelu_epilogue false: c_fc's forward is a BIAS GEMM and its input gradient
// no epilogue GEMM (GELU runs apart).
std::vector<GemmSite> gemm_sites(const ModelConfig& model, int64_t rows, bool gelu_epilogue = true);

// The sites the GEMM planner plans on a device (and the gemm_sites
// micro-benchmarks time): on CUDA gemm_sites, on a CPU step_sites.
std::vector<GemmSite> planned_sites(const ModelConfig& model, int64_t rows, int64_t model_vocab, bool gelu_epilogue,
                                    bool cuda);

// The GEMM sites' work (variants/ops/work.h), each GEMM with the work the rung
// moves into it: with lt-epilogues (CUDA) the bias in the forward and the
// bias gradient in the weight gradient's GEMM, with gelu-epilogue c_fc's
// pre-activation written beside its output and read again by c_proj's input
// gradient; with grads_into_buffers the weight gradient accumulated into the
// fp32 buffer (read and written). Bias gradients left out of the GEMMs are
// sites of their own ("<layer>/bias grad", a reduction over the rows).
void add_gemm_work(const WorkShape& shape, const WorkFlags& flags, WorkList& work);

}  // namespace ladder
