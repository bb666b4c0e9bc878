// variants/planners/gemm_candidates.cpp: see gemm_candidates.h.
#include "variants/planners/gemm_candidates.h"

#include <chrono>
#include <cstdlib>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/version.h>
#include <c10/core/DeviceGuard.h>
#include <fmt/format.h>

#include "profiler/common/cpu_model.h"
#include "variants/ops/gelu/gelu.h"
#include "variants/ops/grad_buffer.h"

#ifdef LADDER_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAStream.h>

#include "variants/cuda/cublaslt_matmul.h"
#endif

namespace ladder::gemm {

namespace {

// The bias gradient summed in fp32 (C and D), in the bias's dtype.
torch::Tensor fp32_bias_grad(const torch::Tensor& t) {
  return t.sum(0, /*keepdim=*/false, torch::kFloat).to(t.scalar_type());
}

#ifdef LADDER_WITH_CUDA
nlohmann::json algo_json(const fused::cuda::LtAlgoInfo& a) {
  return {{"rank", a.rank}, {"offered", a.offered}, {"algo_id", a.algo_id}, {"tile", a.tile_name},
          {"stages", a.stages}, {"splitk", a.splitk}, {"reduction_scheme", a.reduction_scheme},
          {"waves", a.waves}, {"workspace_bytes", a.workspace_bytes}, {"workspace_given", a.workspace_given}};
}

// Where a cuBLASLt call describes its algorithm: only when the caller asked
// (the planner; reading the configuration costs host time on every call).
fused::cuda::LtAlgoInfo* algo_slot(fused::cuda::LtAlgoInfo& used, const Outcome* out) {
  return out && out->want_algo ? &used : nullptr;
}

// Records a cuBLASLt call's result in `out`: true when it ran.
bool lt_ran(bool ok, const std::string& why, const fused::cuda::LtAlgoInfo& used, Outcome* out) {
  if (!out) return ok;
  out->lt = ok;
  out->fell_back = !ok;
  if (!ok) out->why = why;
  if (ok && out->want_algo) out->algo = algo_json(used);
  return ok;
}
#endif

// Whether `grad` is a buffer dW = dy^T x can be added into in place: float32
// (D and E; F also needs dy's dtype: addmm_ takes one), contiguous, on dy's
// device, (O, I).
bool fits_buffer(const torch::Tensor& grad, const torch::Tensor& dy, const torch::Tensor& x) {
  return grad.defined() && grad.scalar_type() == torch::kFloat && grad.is_contiguous() &&
         grad.device() == dy.device() && grad.dim() == 2 && grad.size(0) == dy.size(1) && grad.size(1) == x.size(1);
}

// F: dW added into `grad` by addmm_ (beta = 1) where it fits; false otherwise.
bool add_into_buffer(const torch::Tensor& dy, const torch::Tensor& x, GemmChoice c, const torch::Tensor& grad,
                     Outcome* out) {
  if (c.method != GemmMethod::kIntoGrad || !fits_buffer(grad, dy, x) || dy.scalar_type() != grad.scalar_type() ||
      x.scalar_type() != grad.scalar_type())
    return false;
  auto g = grad;  // the same tensor, updated in place
  if (FirstWrites::claim_first(g)) {
    at::mm_out(g, dy.t(), x);  // the step's first write of this gradient: beta 0, no zeroed buffer read
  } else {
    g.addmm_(dy.t(), x);
  }
  if (out) out->into_grad = true;
  return true;
}

// G: oneDNN's matmul, y (N, O) = x (N, I) w^T (+ b in its epilogue), by
// ATen's mkldnn::_linear_pointwise (what Inductor's CPU linears call; its
// header is not installed with LibTorch, so through the dispatcher). x is
// made contiguous by the op; w may be a transposed view (dx = dy W: w^T).
torch::Tensor onednn_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("mkldnn::_linear_pointwise", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&, c10::string_view,
                            c10::List<std::optional<at::Scalar>>, std::optional<c10::string_view>)>();
  return op.call(x, w, b.defined() ? std::optional<at::Tensor>(b) : std::nullopt, "none",
                 c10::List<std::optional<at::Scalar>>(), std::nullopt);
}

// G's weight gradient dW (O, I) = dy^T x, with dy (N, O) and x (N, I). The
// op makes its first operand contiguous, so of the two ways to ask it the one
// that copies less is taken: dy^T (O x N) as x's rows against x^T, or x^T
// (I x N) against dy^T, whose (I, O) result is then transposed back (I x N
// plus O x I copied). For lm_head (O 50304, I 256, N 1024) the second copies
// 13.1M elements instead of 51.5M.
torch::Tensor onednn_weight_grad(const torch::Tensor& dy, const torch::Tensor& x) {
  const int64_t N = dy.size(0), O = dy.size(1), I = x.size(1);
  if (O * N <= I * N + O * I) return onednn_linear(dy.t(), x.t(), torch::Tensor());  // (O, I)
  return onednn_linear(x.t(), dy.t(), torch::Tensor()).t().contiguous();         // (I, O) -> (O, I)
}

// Whether a call with choice `c` on `t` runs G: on a CPU, with oneDNN built in.
bool wants_onednn(const torch::Tensor& t, GemmChoice c) {
  return c.method == GemmMethod::kOnednn && t.is_cpu() && onednn_available();
}

[[maybe_unused]] bool wants_lt(const torch::Tensor& t, GemmChoice c) {
#ifdef LADDER_WITH_CUDA
  return t.is_cuda() && c.uses_lt();
#else
  (void)t;
  (void)c;
  return false;
#endif
}

}  // namespace

bool onednn_available() { return at::hasMKLDNN(); }

torch::Tensor forward_bias(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b, GemmChoice c,
                           Outcome* out) {
#ifdef LADDER_WITH_CUDA
  if (wants_lt(x, c)) {
    auto y = torch::empty({x.size(0), w.size(0)}, x.options());
    std::string why;
    fused::cuda::LtAlgoInfo used;
    auto* const slot = algo_slot(used, out);
    if (lt_ran(fused::cuda::lt_linear_forward(x, w, b, y, nullptr, &why, c.algo_rank, slot), why, used, out))
      return y;
  }
#endif
  if (wants_onednn(x, c)) return onednn_linear(x, w, b);
  return at::addmm(b, x, w.t());
}

torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& w, GemmChoice c) {
  if (wants_onednn(x, c)) return onednn_linear(x, w, torch::Tensor());
  return x.mm(w.t());
}

torch::Tensor input_grad(const torch::Tensor& dy, const torch::Tensor& w, GemmChoice c) {
  if (wants_onednn(dy, c)) return onednn_linear(dy, w.t(), torch::Tensor());
  return dy.mm(w);
}

std::pair<torch::Tensor, torch::Tensor> forward_bias_gelu(const torch::Tensor& x, const torch::Tensor& w,
                                                          const torch::Tensor& b, GemmChoice c, Outcome* out) {
#ifdef LADDER_WITH_CUDA
  if (wants_lt(x, c)) {
    auto h = torch::empty({x.size(0), w.size(0)}, x.options());
    auto pre = torch::empty_like(h);
    std::string why;
    fused::cuda::LtAlgoInfo used;
    auto* const slot = algo_slot(used, out);
    if (lt_ran(fused::cuda::lt_linear_forward(x, w, b, h, &pre, &why, c.algo_rank, slot), why, used, out)) {
      if (out) out->gelu = true;
      return {h, pre};
    }
  }
#endif
  auto pre = forward_bias(x, w, b, c);  // A or G
  return {fused::gelu_tanh(pre), pre};  // a CPU's vectorised loop (variants/ops/gelu/gelu.h), else ATen's
}

std::pair<torch::Tensor, torch::Tensor> weight_bias_grad(const torch::Tensor& dy, const torch::Tensor& x,
                                                         GemmChoice c, const torch::Tensor& grad, Outcome* out) {
#ifdef LADDER_WITH_CUDA
  if (wants_lt(dy, c)) {
    std::string why;
    fused::cuda::LtAlgoInfo used;
    auto* const slot = algo_slot(used, out);
    const bool bgradb = c.method == GemmMethod::kLtIntoGradBgradb;
    const bool into = into_grad_method(c.method) && fits_buffer(grad, dy, x);
    if (into) {
      auto g = grad;  // the same tensor, updated in place
      if (bgradb) {  // E: the bias gradient from the epilogue, in fp32
        auto db = torch::empty({dy.size(1)}, dy.options().dtype(torch::kFloat));
        if (lt_ran(fused::cuda::lt_weight_bias_grad_accumulate(dy, x, g, db, &why, c.algo_rank, slot), why, used,
                   out)) {
          if (out) out->into_grad = true;
          return {torch::Tensor(), db};
        }
      } else if (lt_ran(fused::cuda::lt_weight_grad_accumulate(dy, x, g, &why, c.algo_rank, slot), why, used,
                        out)) {
        if (out) out->into_grad = true;
        return {torch::Tensor(), fp32_bias_grad(dy)};
      }
    }
    auto dw = torch::empty({dy.size(1), x.size(1)}, dy.options());
    if (c.method == GemmMethod::kLt || bgradb) {  // B, or E without a buffer to go into
      auto db = torch::empty({dy.size(1)}, dy.options());
      if (lt_ran(fused::cuda::lt_weight_bias_grad(dy, x, dw, db, &why, c.algo_rank, slot), why, used, out))
        return {dw, db};
    } else if (lt_ran(fused::cuda::lt_weight_grad(dy, x, dw, &why, c.algo_rank, slot), why, used, out)) {
      return {dw, fp32_bias_grad(dy)};  // C, or D without a buffer to go into
    }
  }
#endif
  if (add_into_buffer(dy, x, c, grad, out)) return {torch::Tensor(), dy.sum(0)};
  if (wants_onednn(dy, c)) return {onednn_weight_grad(dy, x), dy.sum(0)};
  return {dy.t().mm(x), dy.sum(0)};
}

torch::Tensor weight_grad(const torch::Tensor& dy, const torch::Tensor& x, GemmChoice c, const torch::Tensor& grad,
                          Outcome* out) {
  if (add_into_buffer(dy, x, c, grad, out)) return torch::Tensor();
  if (wants_onednn(dy, c)) return onednn_weight_grad(dy, x);
  return dy.t().mm(x);
}

torch::Tensor input_grad_dgelu(const torch::Tensor& dy, const torch::Tensor& w, const torch::Tensor& pre,
                               GemmChoice c, Outcome* out) {
#ifdef LADDER_WITH_CUDA
  if (wants_lt(dy, c)) {
    auto dpre = torch::empty_like(pre);
    std::string why;
    fused::cuda::LtAlgoInfo used;
    auto* const slot = algo_slot(used, out);
    if (lt_ran(fused::cuda::lt_input_grad_dgelu(dy, w, pre, dpre, &why, c.algo_rank, slot), why, used, out)) {
      if (out) out->gelu = true;
      return dpre;
    }
  }
#endif
  return fused::gelu_tanh_backward(input_grad(dy, w, c), pre, /*dy_is_scratch=*/true);  // over the GEMM's output
}

// ---- a site, its operands and its candidates -------------------------------------------

namespace {

// A generator on `device` seeded with `seed`: a site's operands are drawn
// where they are used (on a GPU, 80M normals drawn by the host took about a
// second per site), and never from the global generator the model's
// initialisation may read.
at::Generator operand_generator(const torch::Device& device, uint64_t seed) {
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) {
    auto gen = at::make_generator<at::CUDAGeneratorImpl>(
        device.index() < 0 ? c10::cuda::current_device() : device.index());
    gen.set_current_seed(seed);
    return gen;
  }
#endif
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

}  // namespace

SiteOperands draw_operands(const GemmSite& s, const torch::Device& device, torch::ScalarType dtype, uint64_t seed) {
  auto gen = operand_generator(device, seed);
  const auto on = torch::TensorOptions().dtype(torch::kFloat).device(gen.device());
  auto r = [&](std::vector<int64_t> sizes, double scale) {
    return (torch::randn(sizes, gen, on) * scale).to(dtype).to(device);
  };
  SiteOperands o{r({s.rows, s.in}, 1.0), r({s.out, s.in}, 0.02), r({s.out}, 0.02), r({s.rows, s.out}, 1.0),
                 r({s.rows, s.in}, 1.0), torch::Tensor()};
  if (s.role == GemmRole::kWeightBiasGrad || s.role == GemmRole::kWeightGrad)
    o.grad = torch::zeros({s.out, s.in}, torch::TensorOptions().dtype(torch::kFloat).device(device));
  return o;
}

SiteOperands to_double(const SiteOperands& o) {
  auto d = [](const torch::Tensor& t) { return t.defined() ? t.to(torch::kFloat64) : t; };
  return {d(o.x), d(o.w), d(o.b), d(o.dy), d(o.pre), d(o.grad)};
}

std::vector<torch::Tensor> run_site(const GemmSite& s, const SiteOperands& o, GemmChoice c, Outcome* out) {
  switch (s.role) {
    case GemmRole::kForwardBias: return {forward_bias(o.x, o.w, o.b, c, out)};
    case GemmRole::kForwardBiasGelu: {
      auto [h, pre] = forward_bias_gelu(o.x, o.w, o.b, c, out);
      return {h, pre};
    }
    case GemmRole::kWeightBiasGrad: {
      const auto before = o.grad.defined() ? o.grad.clone() : o.grad;
      auto [dw, db] = weight_bias_grad(o.dy, o.x, c, o.grad, out);
      if (!dw.defined()) dw = (o.grad - before).to(o.dy.scalar_type());  // D: what went into the buffer
      return {dw, db};
    }
    case GemmRole::kInputGradDgelu: return {input_grad_dgelu(o.dy, o.w, o.pre, c, out)};
    case GemmRole::kForward: return {forward(o.x, o.w, c)};
    case GemmRole::kInputGrad: return {input_grad(o.dy, o.w, c)};
    case GemmRole::kWeightGrad: {
      const auto before = o.grad.defined() ? o.grad.clone() : o.grad;
      auto dw = weight_grad(o.dy, o.x, c, o.grad, out);
      if (!dw.defined()) dw = (o.grad - before).to(o.dy.scalar_type());  // F: what went into the buffer
      return {dw};
    }
  }
  return {};
}

void call_site(const GemmSite& s, const SiteOperands& o, GemmChoice c) {
  switch (s.role) {
    case GemmRole::kForwardBias: forward_bias(o.x, o.w, o.b, c); break;
    case GemmRole::kForwardBiasGelu: forward_bias_gelu(o.x, o.w, o.b, c); break;
    case GemmRole::kWeightBiasGrad: {
      const auto dw = weight_bias_grad(o.dy, o.x, c, o.grad).first;
      // As fused_linear.cpp's hand_param_grad: a dW that came back (A, B, C)
      // is added into the fp32 buffer, a pass over it that D and E spare.
      if (dw.defined() && o.grad.defined()) o.grad.add_(dw);
      break;
    }
    case GemmRole::kInputGradDgelu: input_grad_dgelu(o.dy, o.w, o.pre, c); break;
    case GemmRole::kForward: forward(o.x, o.w, c); break;
    case GemmRole::kInputGrad: input_grad(o.dy, o.w, c); break;
    case GemmRole::kWeightGrad: {
      const auto dw = weight_grad(o.dy, o.x, c, o.grad);
      if (dw.defined() && o.grad.defined()) o.grad.add_(dw);  // as the classifier's backward: A's dW added after
      break;
    }
  }
}

double relative_l2(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const auto g = got[i].to(torch::kFloat64), w = want[i].to(torch::kFloat64);
    const double den = std::max(w.norm().item<double>(), 1e-30);
    worst = std::max(worst, (g - w).norm().item<double>() / den);
  }
  return worst;
}

namespace {

// One candidate: probed once (did cuBLASLt run it, does it match A), and its call.
RunnableCandidate probe(const GemmSite& s, const SiteOperands& o, GemmChoice c, const std::vector<torch::Tensor>& a,
                        double tolerance) {
  RunnableCandidate rc;
  rc.result.choice = c;
  Outcome out;
  out.want_algo = true;
  std::vector<torch::Tensor> got;
  try {
    got = run_site(s, o, c, &out);
  } catch (const std::exception& e) {
    // A cuBLASLt error at one candidate costs that candidate, not the run; so
    // does oneDNN's refusal (on an AVX2-only CPU it cannot create a bf16
    // inner product: "could not create a primitive descriptor").
    if (!c.uses_lt() && c.method != GemmMethod::kOnednn) throw;
    rc.result.why_not = e.what();
    return rc;
  }
  rc.result.algo = out.algo;
  if (auto why = not_as_asked(c, out, o.grad.defined()); !why.empty()) {
    rc.result.why_not = std::move(why);
    return rc;
  }
  if (const double err = relative_l2(got, a); !(err <= tolerance)) {
    rc.result.why_not = fmt::format("differs from pytorch's outputs: relative L2 {:.2e} > {:.0e}", err, tolerance);
    return rc;
  }
  rc.result.ran = true;
  rc.run = [&s, &o, c] { call_site(s, o, c); };
  return rc;
}

}  // namespace

std::string not_as_asked(GemmChoice c, const Outcome& out, bool into_buffer) {
  if (c.uses_lt() && !out.lt) return "cuBLASLt did not run: " + (out.why.empty() ? "it is CUDA only" : out.why);
  if (c.method == GemmMethod::kOnednn && !onednn_available()) return "oneDNN is not built into this LibTorch";
  if (c.method == GemmMethod::kIntoGrad && into_buffer && !out.into_grad)
    return "addmm_ into the fp32 buffer takes fp32 operands; this GEMM runs in another dtype";
  if (into_grad_method(c.method) && into_buffer && !out.into_grad)
    return "cuBLASLt has no algorithm for dW into the fp32 buffer: " + out.why;
  return "";
}

std::vector<RunnableCandidate> site_candidates(const GemmSite& s, const SiteOperands& o, const torch::Device& device,
                                               bool into_grad) {
  torch::NoGradGuard no_grad;
  const double tolerance = o.x.scalar_type() == torch::kBFloat16 ? 2e-2 : 5e-3;
  const auto a = run_site(s, o, {});
  std::vector<RunnableCandidate> out = {probe(s, o, {}, a, tolerance)};
  for (GemmMethod m : kGemmMethods) {  // A ran above
    if (m == GemmMethod::kPytorch || !method_on_device(m, device.is_cuda()) || !method_applies(m, s.role, into_grad))
      continue;
    if (!GemmChoice{m, 0}.uses_lt()) {  // F, G: ATen's ops, no algorithms to rank
      out.push_back(probe(s, o, {m, 0}, a, tolerance));
      continue;
    }
    for (int rank = 0;; ++rank) {
      RunnableCandidate rc = probe(s, o, {m, rank}, a, tolerance);
      // How many algorithms the heuristic offers: known once one of them ran.
      const int offered = rc.result.algo.is_object() ? rc.result.algo.value("offered", 0) : 0;
      const bool none = !rc.result.ran && rank == 0;
      out.push_back(std::move(rc));
      if (none || offered == 0 || rank + 1 >= offered) break;
    }
  }
  return out;
}

// ---- the step's plan -------------------------------------------------------------------

std::string plan_device_name(const torch::Device& device) {
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda())
    return at::cuda::getDeviceProperties(device.index() < 0 ? c10::cuda::current_device() : device.index())->name;
#endif
  if (device.is_cuda()) return "cuda";
  // The instruction set ATen's kernels and oneDNN's primitives may use is the
  // CPU's unless limited (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA): a plan
  // measured with bf16 inner products is no plan where oneDNN cannot create
  // them (it failed the step, 2026-12-02).
  const char* onednn = std::getenv("ONEDNN_MAX_CPU_ISA");
  return fmt::format("cpu: {}, {} threads, {}{}", cpu_model_name(), at::get_num_threads(), at::get_cpu_capability(),
                     onednn && *onednn ? fmt::format(", oneDNN {}", onednn) : std::string());
}

GemmPlanKey plan_key(const torch::Device& device, const ModelConfig& model, int64_t rows, int64_t model_vocab,
                     const std::string& dtype, bool gelu_epilogue, bool into_grad) {
  GemmPlanKey k;
  k.device = plan_device_name(device);
  k.vocab = device.is_cuda() ? 0 : model_vocab;
  k.torch = TORCH_VERSION;
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) k.cublaslt = fused::cuda::lt_version();
#endif
  k.dtype = dtype;
  k.n_embd = model.n_embd;
  k.n_layer = model.n_layer;
  k.rows = rows;
  k.gelu_epilogue = gelu_epilogue;
  k.into_grad = into_grad;
  return k;
}

namespace {

// The planner's source of candidates: at each site, operands drawn for it
// (kept in `operands` while its candidates are timed) and every choice the
// device offers there. Without the flat buffer (key.into_grad false) dW goes
// back through autograd: no buffer to add into.
CandidateSource site_source(SiteOperands& operands, const GemmPlanKey& key, const torch::Device& device,
                            torch::ScalarType compute) {
  return [&operands, &key, device, compute](const GemmSite& s) {
    operands = draw_operands(s, device, compute, /*seed=*/1234);
    if (!key.into_grad) operands.grad = torch::Tensor();
    return site_candidates(s, operands, device, key.into_grad);
  };
}

#ifdef LADDER_WITH_CUDA
// CUDA events around one call on the current stream. The stream first
// sleeps (about 0.2 ms at H100 clocks) while the host enqueues the call, so
// the events time the kernels back to back, as a graph replays them, and not
// the host's launch latency before the first (about 5 us: 15 % of a 30 us
// GEMM, more than the margin) or between them (C's bias sum and cast).
double event_time_ms(const std::function<void()>& fn) {
  constexpr int64_t kSleepCycles = 350000;
  at::cuda::CUDAEvent start(cudaEventDefault), stop(cudaEventDefault);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  at::cuda::sleep(kSleepCycles);
  start.record(stream);
  fn();
  stop.record(stream);
  stop.synchronize();
  return double(start.elapsed_time(stop));
}

// Measures the plan with ladder's own 32 MiB cuBLASLt workspace (ATen's
// cuBLAS calls get 32 MiB; torch's cuBLASLt workspace is 1 MiB), kept for the
// run so the step's GEMMs run as they were timed.
GemmPlan measure_on_cuda(const std::vector<GemmSite>& sites, const GemmPlanKey& key, const torch::Device& device,
                         torch::ScalarType compute) {
  constexpr size_t kWorkspace = size_t(32) << 20;
  fused::cuda::set_lt_workspace_bytes(kWorkspace);
  SiteOperands operands;
  GemmPlan p = measure_plan(sites, key, site_source(operands, key, device, compute), event_time_ms);
  p.workspace_bytes = kWorkspace;
  return p;
}
#endif

}  // namespace

namespace {

// The wall clock around one call: a CPU runs its GEMMs synchronously.
double wall_time_ms(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

CandidateTimer planner_timer(const torch::Device& device) {
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) return event_time_ms;
#endif
  TORCH_CHECK(device.is_cpu(), "planner_timer: a CPU or CUDA device, got ", device.str());
  return wall_time_ms;
}

namespace {

GemmPlan measure_on_cpu(const std::vector<GemmSite>& sites, const GemmPlanKey& key, const torch::Device& device,
                        torch::ScalarType compute) {
  SiteOperands operands;
  return measure_plan(sites, key, site_source(operands, key, device, compute), wall_time_ms, kGemmPlanMarginCpu);
}

// The plan as --gemm-plan pins it, or nullopt for a measured one (auto).
std::optional<GemmPlan> pinned_or_file(const GemmPlanRequest& req, const std::vector<GemmSite>& sites,
                                       const GemmPlanKey& key, bool cuda) {
  if (req.mode == "pytorch") return pinned_plan(sites, key, GemmMethod::kPytorch, req.mode);
  if (req.mode == "lt") {
    GemmPlan p = pinned_plan(sites, key, cuda ? GemmMethod::kLt : GemmMethod::kPytorch, req.mode);
    if (!cuda) p.source = "cpu: --gemm-plan lt pins cuBLASLt, which is CUDA's: PyTorch's ops";
    return p;
  }
  if (req.mode != "file") return std::nullopt;
  GemmPlan p = plan_from_file(req.plan, req.file, sites, key);
#ifdef LADDER_WITH_CUDA
  if (cuda) {
    fused::cuda::set_lt_workspace_bytes(req.plan.workspace_bytes);  // as the plan was measured
    p.workspace_bytes = fused::cuda::lt_workspace_bytes();
  }
#endif
  return p;
}

}  // namespace

GemmPlan plan_step_gemms(const RunConfig& cfg, const torch::Device& device, bool lt_epilogues, bool gelu_epilogue,
                         bool into_grad, torch::ScalarType compute, const std::string& dtype) {
  const bool cuda = device.is_cuda();
  const int64_t rows = cfg.batch * cfg.seq;
  const auto sites = planned_sites(cfg.model, rows, cfg.model_vocab(), gelu_epilogue, cuda);
  const GemmPlanKey key = plan_key(device, cfg.model, rows, cfg.model_vocab(), dtype, gelu_epilogue, into_grad);
  const GemmPlanRequest req = parse_gemm_plan_request(cfg.gemm_plan);
  if (cuda && !lt_epilogues) {
    GemmPlan p = pinned_plan(sites, key, GemmMethod::kPytorch, req.mode);
    p.source = "lt-epilogues is off in this rung: PyTorch's ops";
    return p;
  }
  c10::OptionalDeviceGuard guard;
  if (cuda) guard.reset_device(device);
  if (auto p = pinned_or_file(req, sites, key, cuda)) return *p;
  if (auto cached = load_cached_plan(key)) {
#ifdef LADDER_WITH_CUDA
    if (cuda) fused::cuda::set_lt_workspace_bytes(cached->workspace_bytes);
#endif
    return *cached;
  }
  GemmPlan p;
#ifdef LADDER_WITH_CUDA
  if (cuda) p = measure_on_cuda(sites, key, device, compute);
#endif
  if (!cuda) p = measure_on_cpu(sites, key, device, compute);
  save_cached_plan(p);
  return p;
}

}  // namespace ladder::gemm
