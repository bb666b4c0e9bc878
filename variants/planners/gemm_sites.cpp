// variants/planners/gemm_sites.cpp: see gemm_sites.h. The layouts mirror
// variants/cuda/cublaslt_matmul.cpp: row-major Y = X W^T is column-major
// Y^T (O, N) = W (O, I) X^T; dW^T (I, O) = X^T dY; dPre^T (I, N) = W^T dY^T.
#include "variants/planners/gemm_sites.h"

#include <iterator>

#include <fmt/format.h>

namespace ladder {

namespace {

// Which of the three products a role computes.
GemmPass pass_of(GemmRole role) {
  switch (role) {
    case GemmRole::kForwardBias:
    case GemmRole::kForwardBiasGelu:
    case GemmRole::kForward: return GemmPass::kForward;
    case GemmRole::kWeightBiasGrad:
    case GemmRole::kWeightGrad: return GemmPass::kWeightGrad;
    case GemmRole::kInputGradDgelu:
    case GemmRole::kInputGrad: return GemmPass::kInputGrad;
  }
  return GemmPass::kForward;
}

}  // namespace

bool has_epilogue(GemmRole role) {
  return role == GemmRole::kForwardBias || role == GemmRole::kForwardBiasGelu || role == GemmRole::kWeightBiasGrad ||
         role == GemmRole::kInputGradDgelu;
}

int64_t GemmSite::m() const {
  switch (pass_of(role)) {
    case GemmPass::kForward: return out;
    case GemmPass::kWeightGrad:
    case GemmPass::kInputGrad: return in;
  }
  return 0;
}

int64_t GemmSite::n() const {
  switch (pass_of(role)) {
    case GemmPass::kForward:
    case GemmPass::kInputGrad: return rows;
    case GemmPass::kWeightGrad: return out;
  }
  return 0;
}

int64_t GemmSite::k() const {
  switch (pass_of(role)) {
    case GemmPass::kForward: return in;
    case GemmPass::kWeightGrad: return rows;
    case GemmPass::kInputGrad: return out;
  }
  return 0;
}

bool GemmSite::transa() const { return pass_of(role) == GemmPass::kForward; }
bool GemmSite::transb() const { return pass_of(role) == GemmPass::kWeightGrad; }

const char* GemmSite::epilogue() const {
  switch (role) {
    case GemmRole::kForwardBias: return "BIAS";
    case GemmRole::kForwardBiasGelu: return "GELU_AUX_BIAS";
    case GemmRole::kWeightBiasGrad: return "BGRADB";
    case GemmRole::kInputGradDgelu: return "DGELU";
    case GemmRole::kForward:
    case GemmRole::kInputGrad:
    case GemmRole::kWeightGrad: return "DEFAULT";
  }
  return "?";
}

const char* GemmSite::role_name() const {
  switch (role) {
    case GemmRole::kForwardBias:
    case GemmRole::kForward: return "forward";
    case GemmRole::kForwardBiasGelu: return "forward+gelu";
    case GemmRole::kWeightBiasGrad: return "weight+bias grad";
    case GemmRole::kInputGradDgelu: return "input grad+dgelu";
    case GemmRole::kInputGrad: return "input grad";
    case GemmRole::kWeightGrad: return "weight grad";
  }
  return "?";
}

std::string GemmSite::name() const { return layer + "/" + role_name(); }

std::string GemmSite::describe() const {
  return fmt::format("{} m{} n{} k{} {}{} {}", name(), m(), n(), k(), transa() ? 'T' : 'N', transb() ? 'T' : 'N',
                     epilogue());
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

GemmSite site_of(const StepGemm& g, bool gelu_epilogue) {
  const bool fc = g.layer == "mlp.c_fc", proj = g.layer == "mlp.c_proj";
  GemmRole role = GemmRole::kForward;
  switch (g.pass) {
    case GemmPass::kForward:
      role = !g.bias ? GemmRole::kForward : fc && gelu_epilogue ? GemmRole::kForwardBiasGelu : GemmRole::kForwardBias;
      break;
    case GemmPass::kInputGrad: role = proj && gelu_epilogue ? GemmRole::kInputGradDgelu : GemmRole::kInputGrad; break;
    case GemmPass::kWeightGrad: role = g.bias ? GemmRole::kWeightBiasGrad : GemmRole::kWeightGrad; break;
  }
  return {g.layer, role, g.rows, g.in, g.out, g.per_micro_step};
}

std::vector<GemmSite> step_sites(const ModelConfig& model, int64_t rows, int64_t model_vocab, bool gelu_epilogue) {
  std::vector<GemmSite> sites;
  for (const StepGemm& g : step_gemms(model, rows, model_vocab)) {
    sites.push_back(site_of(g, gelu_epilogue));
    // step_gemms gives a layer's input gradient first; its fused backward runs the weight's first.
    const size_t n = sites.size();
    if (n >= 2 && g.pass == GemmPass::kWeightGrad && sites[n - 2].layer == g.layer)
      std::swap(sites[n - 2], sites[n - 1]);
  }
  return sites;
}

std::vector<GemmSite> gemm_sites(const ModelConfig& model, int64_t rows, bool gelu_epilogue) {
  std::vector<GemmSite> sites;
  for (GemmSite& s : step_sites(model, rows, model.vocab_size, gelu_epilogue))
    if (has_epilogue(s.role)) sites.push_back(std::move(s));
  return sites;
}

std::vector<GemmSite> planned_sites(const ModelConfig& model, int64_t rows, int64_t model_vocab, bool gelu_epilogue,
                                    bool cuda) {
  return cuda ? gemm_sites(model, rows, gelu_epilogue) : step_sites(model, rows, model_vocab, gelu_epilogue);
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
      const double grad_bytes = into ? 4.0 : a, adds = into ? f.accumulating_share(s.micro_steps) : 0;
      w.read_bytes = N * O * a + N * I * a + adds * I * O * 4.0;  // dy, x (and the buffer, where it adds)
      w.write_bytes = I * O * grad_bytes;                         // dW (O, I)
      if (bias_in_gemm) {
        w.read_bytes += adds * O * 4.0;
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
                N * O * a + (into ? f.accumulating_share(s.micro_steps) * O * 4.0 : 0), O * (into ? 4.0 : a));
  }
}

}  // namespace ladder
