// variants/step.cpp: the shared training step (see step.h).
#include "variants/step.h"

#include <nlohmann/json.hpp>

#include "profiler/range.h"

namespace ladder {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kData: return "data";
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kOptimizer: return "optimizer";
  }
  return "?";
}

namespace {
// Opens a phase on construction and closes it on scope exit: a named range
// for Nsight and Kineto (profiler/range.h), and the observer's begin/end
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
    : cfg_(cfg), device_(device), data_(std::move(data)), pg_(pg),
      step_range_name_(profiler::names::step(cfg.rung)) {
  TORCH_CHECK(cfg.sw.ddp == (pg != nullptr), "TrainStep: the ddp switch needs a process group");
  if (cfg.sw.tf32) {
    tf32_effect_ = enable_tf32(device);
  } else {
    disable_tf32(device);
  }
  if (cfg.sw.bf16) bf16_effect_ = enable_bf16(device);
  ModelConfig model_cfg = cfg.model;
  model_cfg.vocab_size = cfg.model_vocab();
  model_ = GPT(model_cfg, ModelOptions{cfg.sw.flash, cfg.sw.fused, cfg.layer_ranges});
  init_gpt2_weights(model_, cfg.seed, cfg.model.vocab_size);
  model_->to(device_);
  model_->train();
  optimizer_ = make_optimizer(model_, cfg.train, cfg.sw.fused_adamw);
  params_ = model_->parameters();
  if (pg_) {
    pg_->broadcast_from_rank0(params_);  // every rank starts from rank 0's weights
    sync_ = std::make_unique<GradientSync>(params_, *pg_, int64_t(cfg.ddp.bucket_cap_mb * 1e6));
  }
  decay_steps_ = cfg.train.lr_decay_steps > 0 ? cfg.train.lr_decay_steps : cfg.total_steps();
  fused_calls_at_start_ = fused::fused_op_calls();
}

TrainStep::~TrainStep() = default;

torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return torch::zeros({});
  auto norms = torch::_foreach_norm(grads, 2);
  auto total = torch::linalg_vector_norm(torch::stack(norms), 2);  // ()
  auto scale = torch::clamp(max_norm / (total + 1e-6), c10::nullopt, 1.0);
  torch::_foreach_mul_(grads, scale);
  return total;
}

torch::Tensor TrainStep::forward_loss(const torch::Tensor& x, const torch::Tensor& y) {
  AutocastScope autocast(cfg_.sw.bf16, device_);  // forward and loss only
  auto logits = model_->forward(x);               // (B, T, Vp)
  auto loss = lm_loss(logits, y, cfg_.model.vocab_size, cfg_.sw.fused);
  // Accumulation averages over micro-steps: scale each micro-loss by 1/m.
  return loss / double(cfg_.micro_steps());
}

StepOutput TrainStep::run(int64_t step, PhaseObserver& observer) {
  profiler::ScopedRange range(step_range_name_);  // "step <rung>"
  StepOutput out;
  const int64_t micro_steps = cfg_.micro_steps();
  // A CUDA graph cannot hold the all-reduce hooks: DDP runs the fused rung eagerly.
  const bool use_graph = cfg_.sw.fused && device_.is_cuda() && !sync_;
  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().device(device_));
  for (int64_t micro = 0; micro < micro_steps; ++micro) {
    Batch batch;
    {
      PhaseScope s(observer, Phase::kData);
      batch = data_->batch(step, micro);
      const bool non_blocking = device_.is_cuda();
      batch.x = batch.x.to(device_, non_blocking);  // (B, T)
      batch.y = batch.y.to(device_, non_blocking);  // (B, T)
    }
    out.tokens += batch.x.numel();
    if (use_graph) {
      // Forward and backward are one replay, which runs no host code: for the
      // observer the forward phase covers both, and Nsight sees one range.
      PhaseScope s(observer, Phase::kForward, profiler::names::kForwardBackwardGraph);
      if (!graph_) {
        profiler::ScopedRange capture(profiler::names::kCaptureGraph);
        graph_ = capture_micro_step(
            [this](const torch::Tensor& x, const torch::Tensor& y) {
              auto loss = forward_loss(x, y);
              loss.backward();
              return loss.detach();
            },
            batch.x, batch.y);
        optimizer_->zero_grad(/*set_to_none=*/false);  // drop the warmup's gradients
      }
      loss_sum += graph_->run(batch.x, batch.y);
      continue;
    }
    torch::Tensor loss;
    {
      PhaseScope s(observer, Phase::kForward);
      loss = forward_loss(batch.x, batch.y);
    }
    {
      PhaseScope s(observer, Phase::kBackward);
      // no_sync on all but the last micro-step: gradients accumulate locally.
      const bool last = micro == micro_steps - 1;
      if (sync_) sync_->prepare(last, observer);
      loss.backward();
      if (sync_ && last) sync_->finish(step);  // as DDP: backward ends with averaged gradients
    }
    loss_sum += loss.detach();
  }
  {
    PhaseScope s(observer, Phase::kOptimizer);
    out.grad_norm = clip_grad_norm(params_, cfg_.train.grad_clip);
    out.lr = learning_rate(cfg_.train, step, decay_steps_);
    optimizer_->step(out.lr);
    if (sync_) {
      sync_->zero_grads();  // gradients stay views of the all-reduce buckets
    } else {
      optimizer_->zero_grad(/*set_to_none=*/!use_graph);
    }
  }
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

std::string sdpa_backend(const RunConfig& cfg, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  const int64_t hs = cfg.model.n_embd / cfg.model.n_head;
  const auto dtype = cfg.sw.bf16 ? torch::kBFloat16 : torch::kFloat32;
  auto q = torch::zeros({cfg.batch, cfg.model.n_head, cfg.seq, hs},
                        torch::TensorOptions().dtype(dtype).device(device));  // (B, nh, T, hs)
  q.set_requires_grad(true);
  const int64_t choice = at::_fused_sdp_choice(q, q, q, {}, 0.0, /*is_causal=*/true);
  // sdp::SDPBackend: math 0, flash_attention 1, efficient_attention 2,
  // cudnn_attention 3, overrideable 4.
  switch (choice) {
    case 0: return "math";
    case 1: return "flash";
    case 2: return "efficient";
    case 3: return "cudnn";
    case 4: return "overrideable";
  }
  return "error";
}

nlohmann::json TrainStep::describe_switches() const {
  nlohmann::json j = nlohmann::json::object();
  auto off = [](const char* why) { return nlohmann::json{{"enabled", false}, {"reason", why}}; };
  auto on = [](bool effective, const std::string& mechanism, const std::string& reason) {
    return nlohmann::json{{"enabled", true}, {"effective", effective}, {"mechanism", mechanism},
                          {"reason", reason}};
  };
  const auto& sw = cfg_.sw;
  j["tf32"] = sw.tf32 ? on(tf32_effect_.effective, tf32_effect_.mechanism, tf32_effect_.reason)
                      : off("not in this rung");
  j["bf16"] = sw.bf16 ? on(bf16_effect_.effective, bf16_effect_.mechanism, bf16_effect_.reason)
                      : off("not in this rung");
  if (sw.fused) {
    nlohmann::json fusions = {"residual_add_layer_norm", "softmax_cross_entropy"};
    if (graph_) fusions.push_back("cuda_graph_forward_backward");
    // Effective only if what the switch promises happened: both fused ops
    // ran (a graph replays them without calling them: counted at capture),
    // and on one GPU the graph was captured.
    const fused::FusedOpCalls now = fused::fused_op_calls();
    const int64_t ln = now.add_layer_norm - fused_calls_at_start_.add_layer_norm;
    const int64_t ce = now.softmax_cross_entropy - fused_calls_at_start_.softmax_cross_entropy;
    const bool graph_expected = device_.is_cuda() && !sync_;
    const bool ran = ln > 0 && ce > 0 && (!graph_expected || graph_);
    j["fused"] = on(ran, "ladder::fused ops (CPU loop / CUDA kernels)",
                    fmt::format("{}; ladder::add_layer_norm ran {} times, ladder::softmax_cross_entropy {} "
                                "(a graph replay calls neither)",
                                graph_              ? "custom fused kernels and a CUDA graph per micro-step"
                                : graph_expected    ? "custom fused kernels, but no CUDA graph was captured"
                                : device_.is_cuda() ? "custom fused kernels; no CUDA graph (the ddp hooks run on the host)"
                                                    : "custom fused CPU ops; CUDA graphs need CUDA",
                                ln, ce));
    j["fused"]["fusions_active"] = fusions;
    j["fused"]["fusions_not_used"] = {
        {{"name", "addmm_gelu_epilogue"},
         {"reason", "at::_addmm_activation has no autograd derivative in LibTorch; a training "
                    "step would have to recompute the pre-activation for GELU's backward"}}};
  } else {
    j["fused"] = off("not in this rung");
  }
  if (sw.flash) {
    const std::string backend = sdpa_backend(cfg_, device_);
    j["flash"] = on(backend != "math", "scaled_dot_product_attention(is_causal=true)",
                    backend == "math" ? "SDPA fell back to the math backend"
                                      : fmt::format("SDPA backend: {}", backend));
    j["flash"]["sdpa_backend"] = backend;
  } else {
    j["flash"] = off("not in this rung");
  }
  if (sw.vocab_pad) {
    const bool changed = cfg_.model_vocab() != cfg_.model.vocab_size;
    j["vocab_pad"] = on(changed, "wte rows padded; padding logits excluded from the softmax",
                        changed ? fmt::format("V {} -> {}", cfg_.model.vocab_size, cfg_.model_vocab())
                                : fmt::format("V {} is already a multiple of 128", cfg_.model.vocab_size));
  } else {
    j["vocab_pad"] = off("not in this rung");
  }
  if (sw.fused_adamw) {
    const int64_t calls = optimizer_->fused_kernel_calls();
    j["fused_adamw"] = on(calls > 0, optimizer_->name(),
                          fmt::format("at::_fused_adamw_ called {} times (one multi-tensor kernel per parameter "
                                      "group per step)", calls));
  } else {
    j["fused_adamw"] = off("not in this rung");
  }
  if (sw.grad_accum) {
    j["grad_accum"] = on(cfg_.micro_steps() > 1, "loss scaled by 1/micro_steps, one optimizer step",
                         fmt::format("{} micro-steps of {} tokens = {} tokens per optimizer step",
                                     cfg_.micro_steps(), cfg_.tokens_per_micro_step(), cfg_.tokens_per_step()));
  } else {
    j["grad_accum"] = off("not in this rung");
  }
  if (sw.ddp) {
    j["ddp"] = on(pg_->world_size() > 1,
                  fmt::format("c10d {} bucketed all-reduce overlapped with backward", pg_->backend_name()),
                  fmt::format("{} rank(s); each reads its own rows of the token stream", pg_->world_size()));
    j["ddp"]["grad_sync"] = sync_->describe();
    if (cfg_.sw.fused && device_.is_cuda())
      j["ddp"]["cuda_graph"] = "off: the all-reduce hooks run on the host during backward";
  } else {
    j["ddp"] = off("not in this rung");
  }
  return j;
}

}  // namespace ladder
