// variants/planners/gemm_candidates.h: each epilogue GEMM site's candidates
// (variants/planners/gemm_plan.h: A pytorch, B lt, C lt-split-bias, D lt-into-grad,
// E lt-into-grad-bgradb),
// written once: fused_linear.cpp runs the plan's choice through these, the
// planner times them, and variants/fused_linear/gemm_sites_micro.cpp times them one by one.
//
// Every function takes row-major tensors in the compute dtype, as
// fused_linear.cpp holds them, and a GemmChoice. For pytorch they run
// PyTorch's ops (addmm; mm and sum; mm and gelu_backward): the unfused
// step's own. into-grad (F) is PyTorch's addmm_ into the fp32 buffer;
// onednn (G) oneDNN's matmul (mkldnn::_linear_pointwise) on a CPU. On
// CUDA a cuBLASLt choice runs cuBLASLt
// (variants/cuda/cublaslt_matmul.h); where it has no algorithm for the
// choice, the same result comes from PyTorch's ops and the outcome says so.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "variants/config/config.h"
#include "variants/planners/gemm_plan.h"

namespace ladder::gemm {

// What one call did: which way it ran and, for the planner, the algorithm.
struct Outcome {
  bool lt = false;         // cuBLASLt ran
  bool gelu = false;       // with a GELU epilogue (GELU_AUX_BIAS, DGELU)
  bool fell_back = false;  // the choice asked for cuBLASLt, which could not: PyTorch's ops ran
  bool into_grad = false;  // D, E: the weight gradient went into the fp32 buffer
  std::string why;         // why it fell back
  bool want_algo = false;  // in: fill algo (the planner; costs host time per call)
  nlohmann::json algo;     // the cuBLASLt algorithm that ran, when asked (null otherwise)
};

// y (N, O) = x (N, I) W^T + b.
torch::Tensor forward_bias(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b, GemmChoice c,
                           Outcome* out = nullptr);
// {h = gelu_tanh(pre), pre = x W^T + b}.
std::pair<torch::Tensor, torch::Tensor> forward_bias_gelu(const torch::Tensor& x, const torch::Tensor& w,
                                                          const torch::Tensor& b, GemmChoice c,
                                                          Outcome* out = nullptr);
// {dW (O, I) = dy^T x, db (O) = sum over rows of dy}. With D or E and `grad`
// a float32 (O, I) tensor, dW is added into `grad` (beta = 1) and comes back
// undefined (E's db in fp32); without a fitting `grad` D runs as C, E as B.
std::pair<torch::Tensor, torch::Tensor> weight_bias_grad(const torch::Tensor& dy, const torch::Tensor& x,
                                                         GemmChoice c, const torch::Tensor& grad = {},
                                                         Outcome* out = nullptr);
// dW (O, I) = dy^T x, no bias (the classifier's). With F and `grad` a
// buffer of dW's shape in dy's dtype, dW is added into it (beta = 1) and
// comes back undefined.
torch::Tensor weight_grad(const torch::Tensor& dy, const torch::Tensor& x, GemmChoice c,
                          const torch::Tensor& grad = {}, Outcome* out = nullptr);
// y (N, O) = x W^T, no bias (the classifier's logits).
torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& w, GemmChoice c);
// dx (N, I) = dy W.
torch::Tensor input_grad(const torch::Tensor& dy, const torch::Tensor& w, GemmChoice c);
// dpre (N, I) = (dy W) * gelu_tanh'(pre). c_fc's bias gradient, the sum of
// dpre over rows, comes with c_fc's weight gradient (weight_bias_grad).
torch::Tensor input_grad_dgelu(const torch::Tensor& dy, const torch::Tensor& w, const torch::Tensor& pre,
                               GemmChoice c, Outcome* out = nullptr);

// Whether this LibTorch has oneDNN (G runs; where it does not, G is not
// offered and a plan's G runs as A).
bool onednn_available();

// D, E and F: the methods whose weight gradient goes into the fp32 buffer.
inline bool into_grad_method(GemmMethod m) {
  return m == GemmMethod::kLtIntoGrad || m == GemmMethod::kLtIntoGradBgradb || m == GemmMethod::kIntoGrad;
}

// Why a call whose Outcome is `out` did not run as `c` asked ("" when it
// did): cuBLASLt asked for and not run (a CPU; no algorithm), or D or E given
// a buffer (`into_buffer`) whose GEMM into it cuBLASLt refused, so their
// fallback ran (C's or B's kernels). Either way the call's time is not c's:
// the planner does not time it, the micro-benchmarks skip it.
std::string not_as_asked(GemmChoice c, const Outcome& out, bool into_buffer);

// A site's operands, drawn at random (seeded) on `device` in `dtype`.
struct SiteOperands {
  torch::Tensor x, w, b;  // forward: x (N, I), w (O, I), b (O)
  torch::Tensor dy, pre;  // weight grad: dy (N, O) and x; dgelu: dy (N, O), w (O, I), pre (N, I)
  torch::Tensor grad;     // weight grad: a float32 (O, I) gradient buffer (D, E and F add into it)
};
SiteOperands draw_operands(const GemmSite& s, const torch::Device& device, torch::ScalarType dtype, uint64_t seed);
SiteOperands to_double(const SiteOperands& o);
// The site's outputs by `c` (D's dW: the buffer's increase).
std::vector<torch::Tensor> run_site(const GemmSite& s, const SiteOperands& o, GemmChoice c, Outcome* out = nullptr);
// The site by `c`, its outputs dropped: what a timing runs. At a weight-
// gradient site with o.grad defined (the step's flat-grads), dW lands in
// o.grad however it came: D and E add into it, A, B and C's dW is added after.
void call_site(const GemmSite& s, const SiteOperands& o, GemmChoice c);

// Every choice the site can take on `device` (A first; B, C, D, E for each of
// the heuristic's algorithms on CUDA; F on a CPU): each probed once,
// checked against A (relative L2 of every output within `dtype`'s
// tolerance), and ready to time.
std::vector<RunnableCandidate> site_candidates(const GemmSite& s, const SiteOperands& o, const torch::Device& device,
                                               bool into_grad);

// max over outputs of ||got - want|| / ||want||, in fp64, where the outputs
// are (copying 400 MB outputs to the host cost tens of ms per candidate).
double relative_l2(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want);

// The planners' timer on `device` (the GEMM plan's and the attention plan's):
// CUDA events around the call, its stream first asleep while the host
// enqueues it, on a GPU; the wall clock on a CPU.
CandidateTimer planner_timer(const torch::Device& device);

// The step's plan for its fused linears, as --gemm-plan asks (cfg.gemm_plan):
// measured (or from the cache), pinned, or from a file. On CUDA the sites
// are the epilogue GEMMs (gemm_sites), on a CPU every GEMM of the step
// (step_sites). `options` are the rung's fused-linear parts; `dtype` the
// compute dtype's name (bf16, fp32, tf32).
GemmPlan plan_step_gemms(const RunConfig& cfg, const torch::Device& device, bool lt_epilogues, bool gelu_epilogue,
                         bool into_grad, torch::ScalarType compute, const std::string& dtype);

// The device as a plan's key names it (the GEMM plan's and the attention
// plan's): the GPU's name, or the CPU's model and its intra-op threads.
std::string plan_device_name(const torch::Device& device);

// The key of the plan for these sites on `device`: on CUDA the GPU's name
// and cuBLASLt's version; on a CPU its model name and intra-op threads, and
// the classifier's vocabulary `model_vocab` (its sites are planned there).
GemmPlanKey plan_key(const torch::Device& device, const ModelConfig& model, int64_t rows, int64_t model_vocab,
                     const std::string& dtype, bool gelu_epilogue, bool into_grad);

}  // namespace ladder::gemm
