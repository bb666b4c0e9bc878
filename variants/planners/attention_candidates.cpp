// variants/planners/attention_candidates.cpp: see attention_candidates.h.
#include "variants/planners/attention_candidates.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <c10/core/DeviceGuard.h>
#include <fmt/format.h>
#include <torch/version.h>

#include "variants/planners/gemm_candidates.h"

namespace ladder::attention {

namespace {

// The switches as the process found them, read once, before any plan set them.
const SdpSwitches& process_switches() {
  static const SdpSwitches s = SdpSwitches::now();
  return s;
}

SdpSwitches switches_for(AttentionBackend b) {
  switch (b) {
    case AttentionBackend::kFlash:
    case AttentionBackend::kFlashFp32: return {true, false, false, false};
    case AttentionBackend::kCudnn: return {false, false, false, true};
    case AttentionBackend::kEfficient: return {false, true, false, false};
    case AttentionBackend::kMath: return {false, false, true, false};
    case AttentionBackend::kPytorch:
    case AttentionBackend::kExplicit: break;  // no SDPA: the switches as found
  }
  return process_switches();
}

// Sets the switches for one backend while in scope, then puts back what was there.
class SwitchesScope {
 public:
  explicit SwitchesScope(AttentionBackend b) { switches_for(b).set(); }

 private:
  SavedSdpSwitches before_;  // made before the body sets the switches
};

const char* sdp_backend_name(int64_t choice) {
  switch (static_cast<at::SDPBackend>(choice)) {
    case at::SDPBackend::math: return "math";
    case at::SDPBackend::flash_attention: return "flash";
    case at::SDPBackend::efficient_attention: return "efficient";
    case at::SDPBackend::cudnn_attention: return "cudnn";
    case at::SDPBackend::overrideable: return "overrideable";
    case at::SDPBackend::error: break;
  }
  return "error";
}

struct Inputs {
  torch::Tensor q, k, v, dy;  // (B, nh, T, hs)
  torch::Tensor mask;         // (T, T) bool, true where attention is allowed (explicit's)
};

Inputs draw_inputs(const AttentionPlanKey& key, const torch::Device& device, torch::ScalarType dtype) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(/*seed=*/1234);
  const auto opts = torch::TensorOptions().dtype(dtype).device(device);
  auto draw = [&] { return torch::randn({key.batch, key.n_head, key.seq, key.head_size}, gen).to(opts); };
  return {draw().requires_grad_(), draw().requires_grad_(), draw().requires_grad_(), draw(),
          torch::ones({key.seq, key.seq}, torch::TensorOptions().dtype(torch::kBool).device(device)).tril()};
}

// Forward and backward under backend `b`: {y, dq, dk, dv}.
std::vector<torch::Tensor> forward_backward(AttentionBackend b, const Inputs& in) {
  SwitchesScope scope(b);
  auto y = causal_attention(attention_call(b), in.q, in.k, in.v, in.mask);  // (B, nh, T, hs)
  auto grads = torch::autograd::grad({y}, {in.q, in.k, in.v}, {in.dy});
  return {y, grads[0], grads[1], grads[2]};
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// What runs for a candidate other than A: its SDPA backend, or "explicit".
const char* picks_of(AttentionBackend b) {
  return b == AttentionBackend::kFlashFp32 ? "flash" : backend_name(b);
}

}  // namespace

std::string sdpa_pick(const AttentionPlanKey& key, const torch::Device& device, torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  auto q = torch::zeros({key.batch, key.n_head, key.seq, key.head_size},
                        torch::TensorOptions().dtype(dtype).device(device));  // (B, nh, T, hs)
  q.set_requires_grad(true);
  return sdp_backend_name(at::_fused_sdp_choice(q, q, q, {}, 0.0, /*is_causal=*/true));
}

std::vector<RunnableAttention> candidates(const AttentionPlanKey& key, const torch::Device& device,
                                          torch::ScalarType dtype) {
  auto in = std::make_shared<Inputs>(draw_inputs(key, device, dtype));
  const double tolerance = dtype == torch::kBFloat16 ? 2e-2 : 5e-3;
  const std::vector<torch::Tensor> a = forward_backward(AttentionBackend::kPytorch, *in);
  std::vector<RunnableAttention> out;
  for (AttentionBackend b : kAttentionBackends) {
    RunnableAttention rc;
    rc.result.backend = backend_name(b);
    rc.run = [b, in] { forward_backward(b, *in); };
    if (b == AttentionBackend::kPytorch) {
      SwitchesScope defaults(b);
      rc.result.picks = sdpa_pick(key, device, dtype);
      rc.result.ran = true;
    } else if (!backend_on_device(b, device.is_cuda())) {
      rc.result.picks = picks_of(b);
      rc.result.why_not = backend_device_only(b);
    } else if (b == AttentionBackend::kFlashFp32 && dtype == torch::kFloat) {
      rc.result.picks = picks_of(b);
      rc.result.why_not = "the attention is fp32 already: flash's kernel, as candidate flash";
    } else {
      rc.result.picks = picks_of(b);
      try {
        if (const double err = gemm::relative_l2(forward_backward(b, *in), a); !(err <= tolerance))
          rc.result.why_not = fmt::format("differs from pytorch's y, dq, dk, dv: relative L2 {:.2e} > {:.0e}", err,
                                          tolerance);
        else
          rc.result.ran = true;
      } catch (const std::exception& e) {
        rc.result.why_not = "cannot run here: " + first_line(e.what());
      }
    }
    out.push_back(std::move(rc));
  }
  return out;
}

AttentionPlan plan_step_attention(const RunConfig& cfg, const torch::Device& device, torch::ScalarType dtype,
                                  const std::string& dtype_name) {
  const bool cuda = device.is_cuda();
  AttentionPlanKey key;
  key.torch = TORCH_VERSION;
  key.dtype = dtype_name;
  key.batch = cfg.batch;
  key.n_head = cfg.model.n_head;
  key.seq = cfg.seq;
  key.head_size = cfg.model.n_embd / cfg.model.n_head;
  key.device = gemm::plan_device_name(device);
  if (cuda && at::globalContext().hasCuDNN()) key.cudnn = std::to_string(at::globalContext().versionCuDNN());
  process_switches();  // read before any plan sets them
  check_attention_plan_request(cfg.attention_plan, device.str());
  if (const auto pinned = parse_backend(cfg.attention_plan)) return pinned_attention_plan(key, *pinned);
  if (auto cached = load_cached_attention_plan(key)) return *cached;
  c10::OptionalDeviceGuard guard;
  if (cuda) guard.reset_device(device);
  AttentionPlan p = measure_attention_plan(candidates(key, device, dtype), key, gemm::planner_timer(device),
                                           cuda ? kAttentionPlanMargin : kAttentionPlanMarginCpu, kAttentionPlanReps,
                                           cuda ? 0.0 : kAttentionPlanFirstRunCutCpu);
  save_cached_attention_plan(p);
  return p;
}

SdpSwitches SdpSwitches::now() {
  const auto& c = at::globalContext();
  return {c.userEnabledFlashSDP(), c.userEnabledMemEfficientSDP(), c.userEnabledMathSDP(), c.userEnabledCuDNNSDP()};
}

void SdpSwitches::set() const {
  auto& c = at::globalContext();
  c.setSDPUseFlash(flash);
  c.setSDPUseMemEfficient(efficient);
  c.setSDPUseMath(math);
  c.setSDPUseCuDNN(cudnn);
}

AttentionCall attention_call(AttentionBackend b) {
  switch (b) {
    case AttentionBackend::kExplicit: return AttentionCall::kExplicit;
    case AttentionBackend::kFlashFp32: return AttentionCall::kSdpaFp32;
    default: return AttentionCall::kSdpa;
  }
}

void apply_attention_plan(const AttentionPlan& p) {
  process_switches();
  switches_for(p.backend()).set();
}

}  // namespace ladder::attention
