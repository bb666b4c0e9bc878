// variants/gemm_sites.cpp: see gemm_sites.h. The layouts mirror
// variants/cuda/cublaslt_matmul.cpp: row-major Y = X W^T is column-major
// Y^T (O, N) = W (O, I) X^T; dW^T (I, O) = X^T dY; dPre^T (I, N) = W^T dY^T.
#include "variants/gemm_sites.h"

#include <iterator>

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

const char* StepGemm::pass_name() const {
  switch (pass) {
    case GemmPass::kForward: return "forward";
    case GemmPass::kInputGrad: return "input grad";
    case GemmPass::kWeightGrad: return "weight grad";
  }
  return "?";
}

std::string StepGemm::name() const { return layer + "/" + pass_name(); }

std::vector<StepGemm> step_gemms(const ModelConfig& model, int64_t rows, int64_t model_vocab) {
  const int64_t C = model.n_embd, L = model.n_layer;
  struct Linear {
    const char* layer;
    int64_t in, out, per_micro_step;
    bool bias;
  };
  const Linear forward_order[] = {{"attn.c_attn", C, 3 * C, L, true},
                                  {"attn.c_proj", C, C, L, true},
                                  {"mlp.c_fc", C, 4 * C, L, true},
                                  {"mlp.c_proj", 4 * C, C, L, true},
                                  {"lm_head", C, model_vocab, 1, false}};
  std::vector<StepGemm> gemms;
  for (const auto& l : forward_order)
    gemms.push_back({l.layer, GemmPass::kForward, rows, l.in, l.out, l.per_micro_step, l.bias});
  // Backward reaches the layers in reverse; each gives its input's gradient, then its weight's.
  for (auto it = std::rbegin(forward_order); it != std::rend(forward_order); ++it)
    for (GemmPass pass : {GemmPass::kInputGrad, GemmPass::kWeightGrad})
      gemms.push_back({it->layer, pass, rows, it->in, it->out, it->per_micro_step, it->bias});
  return gemms;
}

namespace {

// The work of one GEMM (rows N, in I, out O) as the rung runs it: operands
// and output at the matmul dtype (a bytes), a weight gradient into the fp32
// buffer read and written at 4 bytes.
SiteWork gemm_site_work(const StepGemm& g, const WorkShape& s, const WorkFlags& f) {
  const double a = double(s.act_bytes), N = double(g.rows), I = double(g.in), O = double(g.out);
  const bool block = g.layer != "lm_head";
  const bool into = f.grads_into_buffers && (block ? f.fused_linear : f.fused_ce);
  const bool bias_in_gemm = g.bias && f.fused_linear && f.lt_epilogues;
  const bool gelu_aux = f.fused_linear && f.gelu_epilogue;
  SiteWork w{g.name(), profiler::Category::kGemm, WorkBound::kMatmul,
             g.per_micro_step * s.micro_steps, g.flops(), 0, 0};
  switch (g.pass) {
    case GemmPass::kForward:
      w.read_bytes = N * I * a + I * O * a + (g.bias ? O * a : 0);  // x (N, I), W (O, I), b (O)
      w.write_bytes = N * O * a;                                     // y (N, O)
      if (gelu_aux && g.layer == "mlp.c_fc") w.write_bytes += N * O * a;  // pre (N, 4C) beside h
      if (block) w.count *= f.block_forwards();
      break;
    case GemmPass::kInputGrad:
      w.read_bytes = N * O * a + I * O * a;  // dy (N, O), W (O, I)
      w.write_bytes = N * I * a;             // dx (N, I)
      if (gelu_aux && g.layer == "mlp.c_proj") w.read_bytes += N * I * a;  // c_fc's pre (N, 4C) for dGELU
      break;
    case GemmPass::kWeightGrad: {
      const double grad_bytes = into ? 4.0 : a;
      w.read_bytes = N * O * a + N * I * a + (into ? I * O * 4.0 : 0);  // dy, x (and the buffer)
      w.write_bytes = I * O * grad_bytes;                               // dW (O, I)
      if (bias_in_gemm) {
        w.read_bytes += into ? O * 4.0 : 0;
        w.write_bytes += O * grad_bytes;  // db (O) from BGRADB
      }
      break;
    }
  }
  return w;
}

}  // namespace

void add_gemm_work(const WorkShape& s, const WorkFlags& f, WorkList& work) {
  ModelConfig model;
  model.n_layer = s.n_layer;
  model.n_embd = s.n_embd;
  model.n_head = s.n_head;
  for (const StepGemm& g : step_gemms(model, s.rows(), s.model_vocab)) {
    work.add(gemm_site_work(g, s, f));
    const bool bias_in_gemm = f.fused_linear && f.lt_epilogues;
    if (g.pass != GemmPass::kWeightGrad || !g.bias || bias_in_gemm) continue;
    // db (O) = the sum of dy (N, O) over the rows, a reduction of its own.
    const bool into = f.grads_into_buffers && f.fused_linear;
    const double a = double(s.act_bytes), N = double(g.rows), O = double(g.out);
    work.memory(g.layer + "/bias grad", profiler::Category::kElementwiseNorm, g.per_micro_step * s.micro_steps,
                N * O * a + (into ? O * 4.0 : 0), O * (into ? 4.0 : a));
  }
}

}  // namespace ladder
