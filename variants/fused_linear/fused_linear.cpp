// variants/fused_linear/fused_linear.cpp: linear_bias and mlp_gelu (see fused_linear.h):
// the device dispatch of each GEMM-with-epilogue step, the autograd Functions
// and the ATen references.
#include "variants/fused_linear/fused_linear.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <tuple>

#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <fmt/format.h>

#include "variants/ops/cross_entropy/cross_entropy.h"
#include "variants/ops/gelu/gelu.h"
#include "variants/planners/gemm_candidates.h"
#include "variants/ops/grad_buffer.h"


namespace ladder::fused {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

std::atomic<int64_t> g_linear_calls{0}, g_mlp_calls{0}, g_classifier_calls{0}, g_epilogue_gemms{0},
    g_gelu_epilogue_gemms{0}, g_fallback_gemms{0};
std::mutex g_fallback_mutex;
std::string g_last_fallback;

constexpr const char* kGelu = "tanh";  // GPT-2's GELU; cuBLASLt's GELU epilogue is the tanh form

// The way each GEMM of a fused linear runs (gemm_plan.h): the step's plan,
// made for the rung's parts (lt-epilogues off on CUDA: PyTorch's ops;
// gelu-epilogue off: GELU and its derivative apart, so its two roles are no
// sites of it). No plan (a model built without a step): cuBLASLt's first
// algorithm for every epilogue the parts ask for (--gemm-plan lt), PyTorch's
// ops for the rest.
GemmChoice choice_for(const LinearOptions& o, const std::string& layer, GemmRole role) {
  if (o.plan) return o.plan->choice_for(layer, role);
  const bool gelu_role = role == GemmRole::kForwardBiasGelu || role == GemmRole::kInputGradDgelu;
  if (!o.lt_epilogues || !has_epilogue(role) || (gelu_role && !o.gelu_epilogue)) return {};
  return GemmChoice{GemmMethod::kLt, 0};
}

// Counts a GEMM's outcome: its epilogue ran on cuBLASLt, or it fell back (why).
void count(const gemm::Outcome& out) {
  if (out.fell_back) {
    g_fallback_gemms.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(g_fallback_mutex);
    g_last_fallback = out.why;
    return;
  }
  if (!out.lt) return;
  g_epilogue_gemms.fetch_add(1, std::memory_order_relaxed);
  if (out.gelu) g_gelu_epilogue_gemms.fetch_add(1, std::memory_order_relaxed);
}

// The backward's choices, as the autograd context keeps them (ints: the
// context's saved_data holds IValues).
void save_choice(AutogradContext* ctx, const char* name, GemmChoice c) {
  ctx->saved_data[std::string(name) + ".method"] = int64_t(c.method);
  ctx->saved_data[std::string(name) + ".rank"] = int64_t(c.algo_rank);
}
GemmChoice saved_choice(AutogradContext* ctx, const char* name) {
  return {GemmMethod(ctx->saved_data[std::string(name) + ".method"].toInt()),
          int(ctx->saved_data[std::string(name) + ".rank"].toInt())};
}

torch::Tensor hand_param_grad(const torch::Tensor& param, const torch::Tensor& g, bool into_buffer);

// Each step of a fused linear through gemm_candidates.h, counted.
torch::Tensor forward_bias(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b, GemmChoice c) {
  gemm::Outcome out;
  auto y = gemm::forward_bias(x, w, b, c, &out);
  count(out);
  return y;
}

// The weight's and the bias's gradients as the Function returns them (none
// for one that went into its .grad(): by D or E for the weight, else by
// hand_param_grad).
std::pair<torch::Tensor, torch::Tensor> weight_bias_grad(const torch::Tensor& dy, const torch::Tensor& x,
                                                         const torch::Tensor& weight, const torch::Tensor& bias,
                                                         GemmChoice c, bool into_buffer) {
  gemm::Outcome out;
  auto [dw, db] = gemm::weight_bias_grad(dy, x, c, into_buffer ? weight.grad() : torch::Tensor(), &out);
  count(out);
  return {dw.defined() ? hand_param_grad(weight, dw, into_buffer) : dw, hand_param_grad(bias, db, into_buffer)};
}

// The dtype the op computes in: autocast's when autocast is on for x's device
// (what it would cast a linear to), else x's own.
at::ScalarType compute_dtype(const torch::Tensor& x) {
  const auto type = x.device().type();
  return at::autocast::is_autocast_enabled(type) ? at::autocast::get_autocast_dtype(type) : x.scalar_type();
}

torch::Tensor cast(const torch::Tensor& t, at::ScalarType dtype) {
  return t.scalar_type() == dtype ? t : t.to(dtype);
}

// A parameter in the compute dtype, contiguous: its copy in options.casts
// when that is fresh (cast-cache: made once per optimizer step), else cast
// here. Either way the same values (one rounding of the same fp32 numbers).
torch::Tensor compute_copy(const torch::Tensor& param, at::ScalarType dtype, const LinearOptions& options) {
  if (param.scalar_type() != dtype && options.casts)
    if (auto copy = options.casts->find(param, dtype); copy.defined()) return copy;
  return cast(param, dtype).contiguous();
}

void check_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b, const char* op,
                  const char* layer) {
  TORCH_CHECK(x.defined() && w.defined() && b.defined(), op, ": ", layer, " needs x, weight and bias");
  TORCH_CHECK(w.dim() == 2 && b.dim() == 1 && b.size(0) == w.size(0) && x.dim() >= 1 && x.size(-1) == w.size(1),
              op, ": ", layer, " shapes do not fit: x ", x.sizes(), ", weight ", w.sizes(), ", bias ", b.sizes(),
              "; expected x (..., I), weight (O, I), bias (O)");
  TORCH_CHECK(x.device() == w.device() && x.device() == b.device(), op, ": ", layer, " x is on ", x.device(),
              ", weight on ", w.device(), ", bias on ", b.device(), "; expected one device");
  TORCH_CHECK(x.is_floating_point(), op, ": x is ", x.scalar_type(), "; expected a floating-point tensor");
}

// (..., I) -> (N, I) contiguous, and back: the output (N, O) as (..., O).
torch::Tensor rows(const torch::Tensor& x) { return x.reshape({-1, x.size(-1)}).contiguous(); }
torch::Tensor unrows(const torch::Tensor& y, const torch::Tensor& like) {
  auto sizes = like.sizes().vec();
  sizes.back() = y.size(1);
  return y.view(sizes);
}

// A parameter's gradient g (a weight's or a bias's, in the compute dtype or
// fp32) as the Function returns it. With into_buffer and a .grad() already
// there (the flat buffer's fp32 view), g is added into it in place, one pass
// that reads g, and autograd gets none for the parameter; otherwise g goes
// back in the parameter's dtype, and autograd's AccumulateGrad adds or sets
// it. The in-place path also spares the cast pass that autocast's
// ToCopyBackward made before AccumulateGrad's add, which read the cast again
// (for a bias, two kernel launches of a few microseconds each, 48 biases a
// step in GPT-2 small).
torch::Tensor hand_param_grad(const torch::Tensor& param, const torch::Tensor& g, bool into_buffer) {
  torch::Tensor grad = param.grad();  // a handle on the same tensor
  if (into_buffer && grad.defined() && grad.sizes() == g.sizes() && grad.device() == g.device() &&
      grad.is_floating_point()) {
    torch::NoGradGuard no_grad;
    if (FirstWrites::claim_first(grad)) {
      grad.copy_(g);  // the step's first write of this gradient (a CPU's flat buffer is not zeroed for it)
    } else {
      grad.add_(g);
    }
    return torch::Tensor();
  }
  return cast(g, param.scalar_type());
}

}  // namespace

FusedLinearStats fused_linear_stats() {
  FusedLinearStats s;
  s.linear_bias_calls = g_linear_calls.load();
  s.mlp_gelu_calls = g_mlp_calls.load();
  s.classifier_calls = g_classifier_calls.load();
  s.epilogue_gemms = g_epilogue_gemms.load();
  s.gelu_epilogue_gemms = g_gelu_epilogue_gemms.load();
  s.fallback_gemms = g_fallback_gemms.load();
  std::lock_guard<std::mutex> lock(g_fallback_mutex);
  s.last_fallback = g_last_fallback;
  return s;
}

namespace detail {

variable_list LinearBiasFunction::forward(AutogradContext* ctx, const torch::Tensor& x2,
                                          const torch::Tensor& weight, const torch::Tensor& bias,
                                          const LinearOptions& options, const std::string& layer) {
  g_linear_calls.fetch_add(1, std::memory_order_relaxed);
  const c10::OptionalDeviceGuard guard(x2.device());
  const auto w = compute_copy(weight, x2.scalar_type(), options);  // the compute-dtype copies
  const auto b = compute_copy(bias, x2.scalar_type(), options);
  ctx->save_for_backward({x2, w, weight, bias});
  ctx->saved_data["into_buffer"] = options.grads_into_buffers;
  save_choice(ctx, "weight_grad", choice_for(options, layer, GemmRole::kWeightBiasGrad));
  save_choice(ctx, "input_grad", choice_for(options, layer, GemmRole::kInputGrad));
  return {forward_bias(x2, w, b, choice_for(options, layer, GemmRole::kForwardBias))};  // (N, O)
}

variable_list LinearBiasFunction::backward(AutogradContext* ctx, variable_list grad_outputs) {
  const auto saved = ctx->get_saved_variables();
  const auto &x2 = saved[0], &w = saved[1], &weight = saved[2], &bias = saved[3];
  const bool into_buffer = ctx->saved_data["into_buffer"].toBool();
  const auto dy = grad_outputs[0].contiguous();  // (N, O)
  auto [dw, db] = weight_bias_grad(dy, x2, weight, bias, saved_choice(ctx, "weight_grad"), into_buffer);  // (O, I), (O)
  return {gemm::input_grad(dy, w, saved_choice(ctx, "input_grad")), dw, db, torch::Tensor(),
          torch::Tensor()};  // dx (N, I)
}

variable_list MlpGeluFunction::forward(AutogradContext* ctx, const torch::Tensor& x2,
                                       const torch::Tensor& fc_weight, const torch::Tensor& fc_bias,
                                       const torch::Tensor& proj_weight, const torch::Tensor& proj_bias,
                                       const LinearOptions& options) {
  g_mlp_calls.fetch_add(1, std::memory_order_relaxed);
  const c10::OptionalDeviceGuard guard(x2.device());
  const auto dtype = x2.scalar_type();  // the compute-dtype copies of the weights and biases
  const auto fc_w = compute_copy(fc_weight, dtype, options), proj_w = compute_copy(proj_weight, dtype, options);
  const auto fc_b = compute_copy(fc_bias, dtype, options), proj_b = compute_copy(proj_bias, dtype, options);
  torch::Tensor h, pre;  // (N, H) each
  if (options.gelu_epilogue) {
    gemm::Outcome out;
    std::tie(h, pre) = gemm::forward_bias_gelu(x2, fc_w, fc_b,
                                               choice_for(options, "mlp.c_fc", GemmRole::kForwardBiasGelu), &out);
    count(out);
  } else {  // GELU apart: c_fc's forward is a BIAS site
    pre = forward_bias(x2, fc_w, fc_b, choice_for(options, "mlp.c_fc", GemmRole::kForwardBias));
    h = gelu_tanh(pre);  // a CPU's vectorised loop (variants/ops/gelu/gelu.h), else ATen's
  }
  auto y = forward_bias(h, proj_w, proj_b, choice_for(options, "mlp.c_proj", GemmRole::kForwardBias));  // (N, C)
  ctx->save_for_backward({x2, fc_w, pre, h, proj_w, fc_weight, proj_weight, fc_bias, proj_bias});
  ctx->saved_data["into_buffer"] = options.grads_into_buffers;
  save_choice(ctx, "proj_weight_grad", choice_for(options, "mlp.c_proj", GemmRole::kWeightBiasGrad));
  // c_proj's input gradient is a DGELU site with gelu-epilogue, else a plain GEMM with GELU's derivative apart.
  save_choice(ctx, "proj_dgelu", choice_for(options, "mlp.c_proj",
                                            options.gelu_epilogue ? GemmRole::kInputGradDgelu : GemmRole::kInputGrad));
  save_choice(ctx, "fc_weight_grad", choice_for(options, "mlp.c_fc", GemmRole::kWeightBiasGrad));
  save_choice(ctx, "fc_input_grad", choice_for(options, "mlp.c_fc", GemmRole::kInputGrad));
  return {y};
}

variable_list MlpGeluFunction::backward(AutogradContext* ctx, variable_list grad_outputs) {
  const auto saved = ctx->get_saved_variables();
  const auto &x2 = saved[0], &fc_w = saved[1], &pre = saved[2], &h = saved[3], &proj_w = saved[4];
  const auto &fc_weight = saved[5], &proj_weight = saved[6], &fc_bias = saved[7], &proj_bias = saved[8];
  const bool into_buffer = ctx->saved_data["into_buffer"].toBool();
  const auto dy = grad_outputs[0].contiguous();  // (N, C)
  auto [dproj_w, dproj_b] = weight_bias_grad(dy, h, proj_weight, proj_bias, saved_choice(ctx, "proj_weight_grad"),
                                             into_buffer);  // (C, H), (C)
  gemm::Outcome out;
  const auto dpre = gemm::input_grad_dgelu(dy, proj_w, pre, saved_choice(ctx, "proj_dgelu"), &out);  // (N, H)
  count(out);
  auto [dfc_w, dfc_b] = weight_bias_grad(dpre, x2, fc_weight, fc_bias, saved_choice(ctx, "fc_weight_grad"),
                                         into_buffer);  // (H, C), (H)
  auto dx = gemm::input_grad(dpre, fc_w, saved_choice(ctx, "fc_input_grad"));  // (N, C)
  return {dx, dfc_w, dfc_b, dproj_w, dproj_b, torch::Tensor()};
}

variable_list ClassifierCrossEntropyFunction::forward(AutogradContext* ctx, const torch::Tensor& x2,
                                                      const torch::Tensor& weight, const torch::Tensor& targets,
                                                      int64_t valid_vocab, const LinearOptions& options) {
  g_classifier_calls.fetch_add(1, std::memory_order_relaxed);
  const c10::OptionalDeviceGuard guard(x2.device());
  const auto w = compute_copy(weight, x2.scalar_type(), options);  // the compute-dtype copy
  auto logits = gemm::forward(x2, w, choice_for(options, "lm_head", GemmRole::kForward));  // (N, Vp), contiguous
  auto loss = cross_entropy_loss_and_grad_over_logits(logits, targets, valid_vocab);
  ctx->save_for_backward({x2, w, logits, weight});  // logits now hold d(loss)/d(logits)
  ctx->saved_data["into_buffer"] = options.grads_into_buffers;
  save_choice(ctx, "weight_grad", choice_for(options, "lm_head", GemmRole::kWeightGrad));
  save_choice(ctx, "input_grad", choice_for(options, "lm_head", GemmRole::kInputGrad));
  return {loss};
}

variable_list ClassifierCrossEntropyFunction::backward(AutogradContext* ctx, variable_list grad_outputs) {
  const auto saved = ctx->get_saved_variables();
  const auto &x2 = saved[0], &w = saved[1], &dlogits = saved[2], &weight = saved[3];
  const bool into_buffer = ctx->saved_data["into_buffer"].toBool();
  // () float32 on the device: scaling the (N, C) operands, never the (N, Vp)
  // gradient, keeps backward to one read of it per GEMM and needs no sync.
  const auto& dloss = grad_outputs[0];
  auto dx = gemm::input_grad(dlogits, w, saved_choice(ctx, "input_grad")).mul_(dloss);  // (N, C)
  auto dw = gemm::weight_grad(dlogits, x2 * dloss, saved_choice(ctx, "weight_grad"),
                              into_buffer ? weight.grad() : torch::Tensor());  // (Vp, C), or into .grad() (F)
  return {dx, dw.defined() ? hand_param_grad(weight, dw, into_buffer) : dw, torch::Tensor(), torch::Tensor(),
          torch::Tensor()};
}

}  // namespace detail

torch::Tensor classifier_cross_entropy(const torch::Tensor& x, const torch::Tensor& weight,
                                       const torch::Tensor& targets, int64_t valid_vocab,
                                       const LinearOptions& options) {
  RECORD_FUNCTION("ladder::classifier_cross_entropy", std::vector<c10::IValue>({x, weight}));
  TORCH_CHECK(x.defined() && weight.defined() && targets.defined(),
              "classifier_cross_entropy: x, weight and targets must be defined tensors");
  TORCH_CHECK(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1),
              "classifier_cross_entropy: x ", x.sizes(), " and weight ", weight.sizes(),
              " do not fit; expected x (..., C) and weight (Vp, C)");
  TORCH_CHECK(x.device() == weight.device(), "classifier_cross_entropy: x is on ", x.device(), ", weight on ",
              weight.device(), "; expected one device");
  TORCH_CHECK(x.is_floating_point(), "classifier_cross_entropy: x is ", x.scalar_type(),
              "; expected a floating-point tensor");
  TORCH_CHECK(targets.numel() * x.size(-1) == x.numel(), "classifier_cross_entropy: targets ", targets.sizes(),
              " do not match x ", x.sizes(), "; expected one target per row of x");
  auto x2 = rows(cast(x, compute_dtype(x)));
  // The weight goes in as it is: the Function casts it, so that its gradient
  // can go straight into the weight's .grad() (see hand_param_grad).
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  return detail::ClassifierCrossEntropyFunction::apply(x2, weight, targets.reshape({-1}).contiguous(), valid_vocab,
                                                       options)[0];
}

torch::Tensor classifier_cross_entropy_reference(const torch::Tensor& x, const torch::Tensor& weight,
                                                 const torch::Tensor& targets, int64_t valid_vocab) {
  auto logits = at::matmul(x, weight.t());
  return cross_entropy_reference(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}), valid_vocab);
}

torch::Tensor linear_bias(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                          const LinearOptions& options, const std::string& layer) {
  check_linear(x, weight, bias, "linear_bias", "the layer");
  const auto dtype = compute_dtype(x);
  auto x2 = rows(cast(x, dtype));
  // The casts are autocast's (the weight's and the bias's inside the
  // Function, so that their gradients can go straight into .grad()); every
  // GEMM runs in `dtype`.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  return unrows(detail::LinearBiasFunction::apply(x2, weight, bias, options, layer)[0], x);
}

torch::Tensor mlp_gelu(const torch::Tensor& x, const torch::Tensor& fc_weight, const torch::Tensor& fc_bias,
                       const torch::Tensor& proj_weight, const torch::Tensor& proj_bias,
                       const LinearOptions& options) {
  check_linear(x, fc_weight, fc_bias, "mlp_gelu", "c_fc");
  TORCH_CHECK(proj_weight.dim() == 2 && proj_weight.size(1) == fc_weight.size(0), "mlp_gelu: c_proj weight ",
              proj_weight.sizes(), " does not take c_fc's ", fc_weight.size(0), " outputs");
  TORCH_CHECK(proj_bias.defined() && proj_bias.dim() == 1 && proj_bias.size(0) == proj_weight.size(0),
              "mlp_gelu: c_proj bias ", proj_bias.defined() ? proj_bias.sizes() : c10::IntArrayRef{},
              " does not fit c_proj weight ", proj_weight.sizes(), "; expected (", proj_weight.size(0), ")");
  TORCH_CHECK(proj_weight.device() == x.device() && proj_bias.device() == x.device(), "mlp_gelu: c_proj is on ",
              proj_weight.device(), " but x is on ", x.device(), "; expected one device");
  const auto dtype = compute_dtype(x);
  auto x2 = rows(cast(x, dtype));
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  auto y = detail::MlpGeluFunction::apply(x2, fc_weight, fc_bias, proj_weight, proj_bias, options)[0];
  return unrows(y, x);
}

torch::Tensor linear_bias_reference(const torch::Tensor& x, const torch::Tensor& weight,
                                    const torch::Tensor& bias) {
  return at::linear(x, weight, bias);
}

torch::Tensor mlp_gelu_reference(const torch::Tensor& x, const torch::Tensor& fc_weight,
                                 const torch::Tensor& fc_bias, const torch::Tensor& proj_weight,
                                 const torch::Tensor& proj_bias) {
  return at::linear(at::gelu(at::linear(x, fc_weight, fc_bias), kGelu), proj_weight, proj_bias);
}

}  // namespace ladder::fused
