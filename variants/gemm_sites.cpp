// variants/gemm_sites.cpp: see gemm_sites.h. The layouts mirror
// variants/cuda/cublaslt_matmul.cpp: row-major Y = X W^T is column-major
// Y^T (O, N) = W (O, I) X^T; dW^T (I, O) = X^T dY; dPre^T (I, N) = W^T dY^T.
#include "variants/gemm_sites.h"

#include <fmt/format.h>

namespace ladder {

int64_t GemmSite::m() const {
  switch (role) {
    case GemmRole::kForwardBias:
    case GemmRole::kForwardBiasGelu: return out;
    case GemmRole::kWeightBiasGrad:
    case GemmRole::kInputGradDgelu: return in;
  }
  return 0;
}

int64_t GemmSite::n() const {
  switch (role) {
    case GemmRole::kForwardBias:
    case GemmRole::kForwardBiasGelu:
    case GemmRole::kInputGradDgelu: return rows;
    case GemmRole::kWeightBiasGrad: return out;
  }
  return 0;
}

int64_t GemmSite::k() const {
  switch (role) {
    case GemmRole::kForwardBias:
    case GemmRole::kForwardBiasGelu: return in;
    case GemmRole::kWeightBiasGrad: return rows;
    case GemmRole::kInputGradDgelu: return out;
  }
  return 0;
}

bool GemmSite::transa() const { return role == GemmRole::kForwardBias || role == GemmRole::kForwardBiasGelu; }
bool GemmSite::transb() const { return role == GemmRole::kWeightBiasGrad; }

const char* GemmSite::epilogue() const {
  switch (role) {
    case GemmRole::kForwardBias: return "BIAS";
    case GemmRole::kForwardBiasGelu: return "GELU_AUX_BIAS";
    case GemmRole::kWeightBiasGrad: return "BGRADB";
    case GemmRole::kInputGradDgelu: return "DGELU";
  }
  return "?";
}

const char* GemmSite::role_name() const {
  switch (role) {
    case GemmRole::kForwardBias: return "forward";
    case GemmRole::kForwardBiasGelu: return "forward+gelu";
    case GemmRole::kWeightBiasGrad: return "weight+bias grad";
    case GemmRole::kInputGradDgelu: return "input grad+dgelu";
  }
  return "?";
}

std::string GemmSite::name() const { return layer + "/" + role_name(); }

std::string GemmSite::describe() const {
  return fmt::format("{} m{} n{} k{} {}{} {}", name(), m(), n(), k(), transa() ? 'T' : 'N', transb() ? 'T' : 'N',
                     epilogue());
}

std::vector<GemmSite> gemm_sites(const ModelConfig& model, int64_t rows, bool gelu_epilogue) {
  const int64_t C = model.n_embd, H = 4 * C, L = model.n_layer;
  const GemmRole fc_forward = gelu_epilogue ? GemmRole::kForwardBiasGelu : GemmRole::kForwardBias;
  std::vector<GemmSite> sites = {
      {"attn.c_attn", GemmRole::kForwardBias, rows, C, 3 * C, L},
      {"attn.c_proj", GemmRole::kForwardBias, rows, C, C, L},
      {"mlp.c_fc", fc_forward, rows, C, H, L},
      {"mlp.c_proj", GemmRole::kForwardBias, rows, H, C, L},
      // Backward, in the order autograd reaches them: the MLP's first.
      {"mlp.c_proj", GemmRole::kWeightBiasGrad, rows, H, C, L},
  };
  // c_proj's input gradient times gelu'(pre): c_fc's pre-activation gradient in one GEMM;
  // then c_fc's weight and bias gradients from it (every dx is a plain GEMM, no epilogue).
  if (gelu_epilogue) sites.push_back({"mlp.c_proj", GemmRole::kInputGradDgelu, rows, H, C, L});
  sites.push_back({"mlp.c_fc", GemmRole::kWeightBiasGrad, rows, C, H, L});
  sites.push_back({"attn.c_proj", GemmRole::kWeightBiasGrad, rows, C, C, L});
  sites.push_back({"attn.c_attn", GemmRole::kWeightBiasGrad, rows, C, 3 * C, L});
  return sites;
}

}  // namespace ladder
