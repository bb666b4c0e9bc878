// variants/step/step.cpp: the shared training step (see step.h).
#include "variants/step/step.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "profiler/ranges/range.h"
#include "variants/ops/add_layer_norm/add_layer_norm.h"
#include "variants/planners/attention_candidates.h"
#include "variants/ops/cross_entropy/cross_entropy.h"
#include "variants/ddp/grad_sync.h"
#include "variants/ddp/zero1.h"
#include "variants/planners/gemm_candidates.h"
#include "variants/config/precision_name.h"

namespace ladder {

namespace {
// Opens a phase on construction and closes it on scope exit: a named range
// for Nsight and Kineto (profiler/ranges/range.h), and the observer's begin/end
// inside it.
class PhaseScope {
 public:
  PhaseScope(PhaseObserver& o, Phase p, const char* range_name = nullptr)
      : range_(range_name ? range_name : phase_name(p)), o_(o), p_(p) {
    o_.begin(p_);
  }
  ~PhaseScope() { o_.end(p_); }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  profiler::ScopedRange range_;
  PhaseObserver& o_;
  Phase p_;
};
}  // namespace

TrainStep::TrainStep(const RunConfig& cfg, torch::Device device, std::unique_ptr<TokenSource> data,
                     ProcessGroup* pg)
    : cfg_(cfg), plan_(plan_for(cfg)), device_(device), data_(std::move(data)), pg_(pg),
      step_range_name_(profiler::names::step(cfg.rung)) {
  TORCH_CHECK(cfg.sw.on(switches::ddp) == (pg != nullptr), "TrainStep: the ddp switch needs a process group");
  set_numerics();
  plan_kernels();
  build_model();
  build_optimizer();
  join_ranks();
  prepare_buffers();
}

// tf32 and bf16 as the rung asks (and as the device allows: their effects),
// and the kernels fused-ln and fused-ce run on CUDA.
void TrainStep::set_numerics() {
  if (plan_.acts(switches::tf32)) {
    tf32_effect_ = enable_tf32(device_);
  } else {
    disable_tf32(device_);
  }
  if (plan_.acts(switches::bf16)) bf16_effect_ = enable_bf16(device_);
  fused::set_layer_norm_kernel(fused::parse_layer_norm_kernel(cfg_.layer_norm_kernel));
  fused::set_cross_entropy_kernel(fused::parse_cross_entropy_kernel(cfg_.cross_entropy_kernel));
}

// Each epilogue GEMM site's way (fused-linear) and the SDPA backend (flash),
// in the dtype the step's matmuls and attention run in (bf16 under
// autocast); both made before the first step, and so before any graph
// capture. The model's layers, the switches' reports and the report read them.
void TrainStep::plan_kernels() {
  const bool bf16 = plan_.acts(switches::bf16) && cfg_.bf16_applied();
  const torch::ScalarType compute = bf16 ? torch::kBFloat16 : torch::kFloat;
  const std::string dtype = precision_name(matmul_precision(bf16, tf32_effect_.effective));
  if (plan_.model.fused_linear) {
    auto& lin = plan_.model.linear;
    const bool into_grad = lin.grads_into_buffers && !cfg_.sw.on(switches::ddp);
    lin.plan = std::make_shared<const GemmPlan>(
        gemm::plan_step_gemms(cfg_, device_, lin.lt_epilogues, lin.gelu_epilogue, into_grad, compute, dtype));
  }
  if (plan_.model.flash) {
    attention_plan_ = attention::plan_step_attention(cfg_, device_, compute, dtype);
    attention::apply_attention_plan(*attention_plan_);
  }
}

// The model with the plan's options, GPT-2's initial weights, on the device.
// cast-cache: the fused ops read their bf16 copies from it; filled once the
// weights are final (prepare_buffers), refreshed after every update
// (clip_and_update).
void TrainStep::build_model() {
  ModelConfig model_cfg = cfg_.model;
  model_cfg.vocab_size = cfg_.model_vocab();
  ModelOptions model_options = plan_.model;
  model_options.layer_ranges = cfg_.layer_ranges;
  if (attention_plan_) model_options.attention_call = attention::attention_call(attention_plan_->backend());
  if (plan_.acts(switches::cast_cache) && matmuls_in_bf16()) {
    casts_ = std::make_shared<CastCache>(torch::kBFloat16);
    model_options.linear.casts = casts_;
  }
  model_ = GPT(model_cfg, model_options);
  init_gpt2_weights(model_, cfg_.seed, cfg_.model.vocab_size);
  model_->to(device_);
  model_->train();
  params_ = model_->parameters();
}

// AdamW (fused-adamw's kernel or not); ZeRO-1 shards it over the ddp rung's
// ranks (variants/ddp/zero1.h).
void TrainStep::build_optimizer() {
  if (pg_ && plan_.acts(switches::zero1)) {
    auto sharded = std::make_unique<ShardedOptimizer>(params_, cfg_.train, plan_.acts(switches::fused_adamw), *pg_);
    sharded_ = sharded.get();
    optimizer_ = std::move(sharded);
  } else {
    optimizer_ = make_optimizer(model_, cfg_.train, plan_.acts(switches::fused_adamw));
  }
  decay_steps_ = cfg_.train.lr_decay_steps > 0 ? cfg_.train.lr_decay_steps : cfg_.total_steps();
}

// The ddp rung: every rank starts from rank 0's weights, and its gradients
// are all-reduced in buckets. The host's wait on the buckets may follow the
// optimizer's enqueue (fused AdamW only, grad_sync.h); not when the harness
// synchronises the device at every phase boundary (--breakdown), which would
// hang on a failed collective before the wait's deadline could fire.
void TrainStep::join_ranks() {
  if (!pg_) return;
  pg_->broadcast_from_rank0(params_);
  sync_ = std::make_unique<GradientSync>(params_, *pg_, int64_t(cfg_.ddp.bucket_cap_mb * 1e6),
                                         /*defer_host_wait=*/plan_.acts(switches::fused_adamw) && !cfg_.breakdown);
}

// What the step keeps between steps, once the weights are final: the cast
// cache's copies, the flat gradient buffer (the ddp rung keeps its gradients
// in the all-reduce buckets instead), whether a CUDA graph runs the step (it
// cannot hold the all-reduce hooks: ddp runs eagerly), and the fused ops'
// counters at the start.
void TrainStep::prepare_buffers() {
  if (casts_) casts_->track(model_->fused_cast_parameters());  // rank 0's weights on every rank by now
  add_layer_norm_calls_at_start_ = fused::add_layer_norm_calls();
  layer_norm_launches_at_start_ = fused::layer_norm_launches();
  fused_linear_at_start_ = fused::fused_linear_stats();
  if (plan_.acts(switches::flat_grads) && !sync_) flat_grads_ = std::make_unique<FlatGradients>(params_);
  // On a CPU the fused ops' own gradients are written, not added into a zeroed buffer, first each step.
  if (flat_grads_ && device_.is_cpu() && plan_.model.linear.grads_into_buffers)
    flat_grads_->write_first(model_->fused_cast_parameters());
  use_graph_ = plan_.acts(switches::cuda_graph) && flat_grads_ && device_.is_cuda();
  optimizer_in_graph_ = use_graph_ && optimizer_->supports_device_lr();
}

TrainStep::~TrainStep() = default;

std::optional<GemmPlanSection> TrainStep::describe_gemm_plan() const {
  const auto& plan = plan_.model.linear.plan;
  return plan ? std::optional<GemmPlanSection>(plan->section()) : std::nullopt;
}

torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return torch::zeros({});
  auto total = global_grad_norm(grads);  // ()
  torch::_foreach_mul_(grads, clip_coefficient(total, max_norm));
  return total;
}

torch::Tensor TrainStep::clip_and_update(double lr, bool device_lr) {
  const double max_norm = cfg_.train.grad_clip;
  torch::Tensor norm, divisor;  // divisor stays undefined when the clip is already applied
  if (flat_grads_) flat_grads_->check_first_writes();
  if (flat_grads_ && plan_.acts(switches::adamw_clip) && optimizer_->divides_gradients_in_kernel()) {
    std::tie(norm, divisor) = flat_grads_->clip_divisor(max_norm);  // applied inside the AdamW kernel
  } else {
    norm = flat_grads_ ? flat_grads_->clip(max_norm) : clip_grad_norm(params_, max_norm);
  }
  if (device_lr) {
    optimizer_->step_device_lr(divisor);
  } else {
    optimizer_->step(lr, divisor);  // ZeRO-1's gather included: every rank's weights are whole after it
  }
  // The next micro-steps' bf16 weights, in the same stream (and, with the
  // optimizer in the graph, the same graph) right after the update.
  if (casts_) casts_->refresh();
  return norm;
}

torch::Tensor TrainStep::forward_loss(const torch::Tensor& x, const torch::Tensor& y) {
  AutocastScope autocast(plan_.acts(switches::bf16), device_);  // forward and loss only
  auto loss = model_->loss(x, y, cfg_.model.vocab_size);  // fused-ce: lm_head + loss in one node
  // Accumulation averages over micro-steps: scale each micro-loss by 1/m.
  return loss / double(cfg_.micro_steps());
}

std::unique_ptr<GraphedStep> TrainStep::capture_graph(bool whole, const torch::Tensor& x, const torch::Tensor& y) {
  profiler::ScopedRange capture(profiler::names::kCaptureGraph);
  StepFn forward_backward = [this](const torch::Tensor& xs, const torch::Tensor& ys) {
    auto loss = forward_loss(xs, ys);
    loss.backward();
    return std::vector<torch::Tensor>{loss.detach()};
  };
  StepFn body = forward_backward;
  if (whole) {
    // Clip, AdamW and zeroing on the device: the LR comes from the optimizer's
    // device tensor (set before each replay), the step counts are device
    // tensors, and nothing reads a value on the host.
    body = [this, forward_backward](const torch::Tensor& xs, const torch::Tensor& ys) {
      auto outputs = forward_backward(xs, ys);
      outputs.push_back(clip_and_update(/*lr=*/0.0, /*device_lr=*/true));
      flat_grads_->zero();
      return outputs;
    };
  }
  // The first capture warms up (lazy cuBLAS/cuDNN setup happens outside the
  // graph); its forward and backward leave gradients that are dropped here.
  // A second capture (the last micro-step of accumulation) executes nothing,
  // so the gradients accumulated so far stay.
  const bool first = !graph_pool_;
  if (first) graph_pool_ = new_graph_pool();
  if (whole) {
    // The warm-up below runs forward and backward only: run the clip's and the
    // update's kernels once too (on scratch tensors, or reading only), so
    // none of them launches for the first time inside the capture.
    flat_grads_->clip_divisor(cfg_.train.grad_clip);
    optimizer_->warm_up_device_lr_step();
  }
  auto graph = capture_step(forward_backward, first ? 3 : 0, body, x, y, *graph_pool_);
  if (first) flat_grads_->zero();
  return graph;
}

Batch TrainStep::load_batch(int64_t step, int64_t micro, PhaseObserver& observer) {
  PhaseScope s(observer, Phase::kData);
  Batch batch = data_->batch(step, micro);
  const bool non_blocking = device_.is_cuda();
  batch.x = batch.x.to(device_, non_blocking);  // (B, T)
  batch.y = batch.y.to(device_, non_blocking);  // (B, T)
  return batch;
}

bool TrainStep::replay_micro_step(int64_t step, bool last, const Batch& batch, StepOutput& out,
                                  torch::Tensor& loss_sum, PhaseObserver& observer) {
  // A replay runs no host code: for the observer the forward phase covers
  // it all (and the optimizer too when it is in the graph), and Nsight sees
  // one range.
  const bool whole = optimizer_in_graph_ && last;
  PhaseScope s(observer, Phase::kForward, whole ? profiler::names::kStepGraph : profiler::names::kForwardBackwardGraph);
  // Before a capture too: the LR tensor must exist outside the graph.
  if (whole) optimizer_->set_device_lr(out.lr);
  auto& graph = whole ? step_graph_ : micro_graph_;
  if (!graph) graph = capture_graph(whole, batch.x, batch.y);
  auto outputs = graph->run(batch.x, batch.y);
  ++graph_replays_;
  loss_sum += outputs[0];
  TORCH_CHECK(step != keep_gradients_step_, "TrainStep: the gradients of step ", step,
              " cannot be kept: the step replays a CUDA graph, which clips and zeroes them on the device");
  if (whole) out.grad_norm = outputs[1].clone();  // the static buffer is overwritten by the next replay
  return whole;
}

torch::Tensor TrainStep::eager_micro_step(int64_t step, bool last, const Batch& batch, PhaseObserver& observer,
                                          CommObserver& comm) {
  torch::Tensor loss;
  {
    PhaseScope s(observer, Phase::kForward);
    loss = forward_loss(batch.x, batch.y);
  }
  PhaseScope s(observer, Phase::kBackward);
  // no_sync on all but the last micro-step: gradients accumulate locally.
  if (sync_) sync_->prepare(last, comm);
  loss.backward();
  if (sync_ && last) sync_->finish(step);  // as DDP: backward ends with averaged gradients
  return loss.detach();
}

void TrainStep::keep_gradients() {
  torch::NoGradGuard no_grad;
  kept_gradients_.clear();
  for (const auto& item : model_->named_parameters()) {
    const auto& g = item.value().grad();
    kept_gradients_.emplace_back(item.key(), g.defined() ? g.detach().to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true)
                                                         : torch::zeros(item.value().sizes()));
  }
}

void TrainStep::optimizer_phase(StepOutput& out, PhaseObserver& observer) {
  PhaseScope s(observer, Phase::kOptimizer);
  out.grad_norm = clip_and_update(out.lr, /*device_lr=*/false);
  if (sync_) {
    sync_->zero_grads();  // gradients stay views of the all-reduce buckets
  } else if (flat_grads_) {
    flat_grads_->zero();  // one memset; the gradients stay views of the buffer
  } else {
    optimizer_->zero_grad(/*set_to_none=*/true);
  }
}

StepOutput TrainStep::run(int64_t step, PhaseObserver& observer, CommObserver* comm) {
  static CommObserver no_one;
  profiler::ScopedRange range(step_range_name_);  // "step <rung>"
  StepOutput out;
  const int64_t micro_steps = cfg_.micro_steps();
  out.lr = learning_rate(cfg_.train, step, decay_steps_);
  bool optimizer_done = false;
  if (sharded_) sharded_->set_observer(comm);  // its gather, in the optimizer phase
  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().device(device_));
  for (int64_t micro = 0; micro < micro_steps; ++micro) {
    const Batch batch = load_batch(step, micro, observer);
    out.tokens += batch.x.numel();
    const bool last = micro == micro_steps - 1;
    if (use_graph_)
      optimizer_done = replay_micro_step(step, last, batch, out, loss_sum, observer) || optimizer_done;
    else
      loss_sum += eager_micro_step(step, last, batch, observer, comm ? *comm : no_one);
  }
  if (step == keep_gradients_step_ && !optimizer_done) keep_gradients();
  if (!optimizer_done) optimizer_phase(out, observer);
  if (sync_) sync_->await();  // the host's deadline on the all-reduce, once the optimizer is enqueued
  ++steps_run_;
  // The first step had the generous timeout (NCCL warm-up); then steady state.
  if (pg_ && step == 0) pg_->set_timeout(cfg_.ddp.timeout_s);
  out.loss = loss_sum.to(torch::kFloat32);
  return out;
}

void TrainStep::reduce_for_report(StepOutput& out) {
  if (!pg_ || pg_->world_size() == 1) return;
  torch::NoGradGuard no_grad;
  auto loss = out.loss.detach().clone();  // ()
  pg_->wait(pg_->allreduce_sum(loss), "all-reduce of the loss for the report");
  out.loss = loss / double(pg_->world_size());
}

namespace {
// The report entry of a group (fused) from its parts' entries: enabled when
// any part is; effective when every part that is on, and can act on this
// device, acted; the fusions of the parts that acted, and why the others
// did not.
SwitchEffect describe_group(const SwitchDecl& group, const SwitchEffects& entries) {
  std::vector<std::string> on, acted, fusions;
  std::vector<FusionNotUsed> not_used;
  bool effective = true;
  for (const SwitchDecl* part : parts_of(group)) {
    const SwitchEffect& e = entries.at(part->name);
    if (!e.enabled) {
      not_used.push_back({part->name, "not in this rung"});
      continue;
    }
    on.push_back(part->name);
    if (e.took_effect()) {
      acted.push_back(part->name);
      if (e.fusions) fusions.insert(fusions.end(), e.fusions->begin(), e.fusions->end());
    } else {
      not_used.push_back({part->name, e.reason});
      effective = effective && e.inapplicable();
    }
  }
  if (on.empty()) return SwitchEffect::off("not in this rung");
  auto j = SwitchEffect::on(effective && !acted.empty(), fmt::format("its parts: {}", fmt::join(on, ", ")),
                            fmt::format("acted: {}", acted.empty() ? "none" : fmt::format("{}", fmt::join(acted, ", "))));
  j.fusions_active = std::move(fusions);
  j.fusions_not_used = std::move(not_used);
  return j;
}
}  // namespace

namespace {
// The switches `s` needs that are off in `sw`, as "a, b" ("" when none).
std::string needs_off(const SwitchDecl& s, const Switches& sw) {
  std::string off;
  for (const SwitchDecl* need : s.needs)
    if (need && !sw.on(*need)) off += fmt::format("{}{}", off.empty() ? "" : ", ", need->name);
  return off;
}
}  // namespace

SwitchEffects TrainStep::describe_switches() const {
  const int64_t add_layer_norm_calls = fused::add_layer_norm_calls() - add_layer_norm_calls_at_start_;
  fused::FusedLinearStats linear = fused::fused_linear_stats();
  const auto& l0 = fused_linear_at_start_;
  linear.linear_bias_calls -= l0.linear_bias_calls;
  linear.mlp_gelu_calls -= l0.mlp_gelu_calls;
  linear.classifier_calls -= l0.classifier_calls;
  linear.epilogue_gemms -= l0.epilogue_gemms;
  linear.gelu_epilogue_gemms -= l0.gelu_epilogue_gemms;
  linear.fallback_gemms -= l0.fallback_gemms;
  const SwitchFacts facts{cfg_,
                          plan_,
                          device_,
                          tf32_effect_,
                          bf16_effect_,
                          add_layer_norm_calls,
                          fused::layer_norm_launches() - layer_norm_launches_at_start_,
                          linear,
                          uses_graph(),
                          optimizer_in_graph_,
                          graph_replays_,
                          steps_run_,
                          *optimizer_,
                          pg_,
                          sync_.get(),
                          casts_.get(),
                          attention_plan_ ? &*attention_plan_ : nullptr};
  SwitchEffects j;
  for (const SwitchDecl* s : all_switches()) {
    if (s->role == SwitchRole::kGroup) continue;  // from its parts, below
    if (!cfg_.sw.on(*s)) {
      j[s->name] = SwitchEffect::off("not in this rung");
    } else if (s->cuda_only && !device_.is_cuda()) {
      j[s->name] = SwitchEffect::cannot_act("none", "CUDA only: nothing to do on a CPU");
    } else if (const std::string off = needs_off(*s, cfg_.sw); !off.empty()) {
      j[s->name] = SwitchEffect::cannot_act("none", fmt::format("needs {}, off in this rung", off));
    } else if (const auto why = plan_.stood_down.find(s->name); why != plan_.stood_down.end()) {
      j[s->name] = SwitchEffect::cannot_act("none", why->second);  // its apply, or a later switch's, said why
    } else {
      j[s->name] = s->describe(facts);
    }
  }
  for (const SwitchDecl* s : all_switches())
    if (s->role == SwitchRole::kGroup) j[s->name] = describe_group(*s, j);
  return j;
}

}  // namespace ladder
