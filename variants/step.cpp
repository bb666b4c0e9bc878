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
  if (cfg.bf16_applied()) {
    bf16_effect_ = enable_bf16(device);
  } else if (cfg.sw.bf16) {
    bf16_effect_.mechanism = "none: autocast left off, the matmuls run in fp32";
    bf16_effect_.reason = cfg.bf16_off_reason();
  }
  ModelConfig model_cfg = cfg.model;
  model_cfg.vocab_size = cfg.model_vocab();
  // Without ddp the fused rung keeps its gradients in one flat buffer (below),
  // and its ops add the weight gradients straight into it.
  model_ = GPT(model_cfg, ModelOptions{cfg.sw.flash, cfg.sw.fused, cfg.layer_ranges,
                                       /*weight_grads_into_buffers=*/cfg.sw.fused && !cfg.sw.ddp});
  init_gpt2_weights(model_, cfg.seed, cfg.model.vocab_size);
  model_->to(device_);
  model_->train();
  optimizer_ = make_optimizer(model_, cfg.train, cfg.sw.fused_adamw);
  params_ = model_->parameters();
  if (pg_) {
    pg_->broadcast_from_rank0(params_);  // every rank starts from rank 0's weights
    sync_ = std::make_unique<GradientSync>(params_, *pg_, int64_t(cfg.ddp.bucket_cap_mb * 1e6),
                                           /*defer_host_wait=*/cfg.sw.fused_adamw);
  }
  decay_steps_ = cfg.train.lr_decay_steps > 0 ? cfg.train.lr_decay_steps : cfg.total_steps();
  fused_calls_at_start_ = fused::fused_op_calls();
  fused_linear_at_start_ = fused::fused_linear_stats();
  // The ddp rung keeps its gradients in the all-reduce buckets instead.
  if (cfg.sw.fused && !sync_) flat_grads_ = std::make_unique<FlatGradients>(params_);
  // A CUDA graph cannot hold the all-reduce hooks: DDP runs the fused rung eagerly.
  use_graph_ = cfg.sw.fused && device_.is_cuda() && !sync_;
  optimizer_in_graph_ = use_graph_ && optimizer_->supports_device_lr();
}

TrainStep::~TrainStep() = default;

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
  if (flat_grads_ && optimizer_->divides_gradients_in_kernel()) {
    std::tie(norm, divisor) = flat_grads_->clip_divisor(max_norm);  // applied inside the AdamW kernel
  } else {
    norm = flat_grads_ ? flat_grads_->clip(max_norm) : clip_grad_norm(params_, max_norm);
  }
  if (device_lr) {
    optimizer_->step_device_lr(divisor);
  } else {
    optimizer_->step(lr, divisor);
  }
  return norm;
}

torch::Tensor TrainStep::forward_loss(const torch::Tensor& x, const torch::Tensor& y) {
  AutocastScope autocast(cfg_.bf16_applied(), device_);  // forward and loss only
  auto loss = model_->loss(x, y, cfg_.model.vocab_size);  // the fused rung: lm_head + loss in one node
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

StepOutput TrainStep::run(int64_t step, PhaseObserver& observer) {
  profiler::ScopedRange range(step_range_name_);  // "step <rung>"
  StepOutput out;
  const int64_t micro_steps = cfg_.micro_steps();
  out.lr = learning_rate(cfg_.train, step, decay_steps_);
  bool optimizer_done = false;
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
    if (use_graph_) {
      // A replay runs no host code: for the observer the forward phase covers
      // it all (and the optimizer too when it is in the graph), and Nsight
      // sees one range.
      const bool whole = optimizer_in_graph_ && micro == micro_steps - 1;
      PhaseScope s(observer, Phase::kForward,
                   whole ? profiler::names::kStepGraph : profiler::names::kForwardBackwardGraph);
      // Before a capture too: the LR tensor must exist outside the graph.
      if (whole) optimizer_->set_device_lr(out.lr);
      auto& graph = whole ? step_graph_ : micro_graph_;
      if (!graph) graph = capture_graph(whole, batch.x, batch.y);
      auto outputs = graph->run(batch.x, batch.y);
      ++graph_replays_;
      loss_sum += outputs[0];
      TORCH_CHECK(step != keep_gradients_step_, "TrainStep: the gradients of step ", step,
                  " cannot be kept: the step replays a CUDA graph, which clips and zeroes them on the device");
      if (whole) {
        out.grad_norm = outputs[1].clone();  // the static buffer is overwritten by the next replay
        optimizer_done = true;
      }
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
  if (step == keep_gradients_step_ && !optimizer_done) {
    torch::NoGradGuard no_grad;
    kept_gradients_.clear();
    for (const auto& item : model_->named_parameters()) {
      const auto& g = item.value().grad();
      kept_gradients_.emplace_back(item.key(), g.defined() ? g.detach().to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true)
                                                           : torch::zeros(item.value().sizes()));
    }
  }
  if (!optimizer_done) {
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

std::string sdpa_backend(const RunConfig& cfg, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  const int64_t hs = cfg.model.n_embd / cfg.model.n_head;
  const auto dtype = cfg.bf16_applied() ? torch::kBFloat16 : torch::kFloat32;
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
    // Effective only if what the switch promises happened: the fused ops ran
    // (a graph replays them without calling them: counted at capture), on
    // CUDA their GEMM epilogues ran in cuBLASLt, and on one GPU the graph was
    // captured.
    const fused::FusedOpCalls now = fused::fused_op_calls();
    const fused::FusedLinearStats lin = fused::fused_linear_stats();
    const int64_t ln = now.add_layer_norm - fused_calls_at_start_.add_layer_norm;
    const int64_t ce = lin.classifier_calls - fused_linear_at_start_.classifier_calls;
    const int64_t mlp = lin.mlp_gelu_calls - fused_linear_at_start_.mlp_gelu_calls;
    const int64_t lb = lin.linear_bias_calls - fused_linear_at_start_.linear_bias_calls;
    const int64_t epilogues = lin.epilogue_gemms - fused_linear_at_start_.epilogue_gemms;
    const int64_t fallbacks = lin.fallback_gemms - fused_linear_at_start_.fallback_gemms;
    const bool cuda = device_.is_cuda();
    const bool graph = uses_graph();
    // The classifier: lm_head GEMM and softmax cross-entropy in one node, the
    // logits' gradient written over them in the loss's own pass (model.h).
    nlohmann::json fusions = {"residual_add_layer_norm", "classifier_loss_and_grad_in_one_pass",
                              "mlp_one_autograd_node"};
    // Under bf16 autocast the LayerNorms write bf16 for the next matmul, so no
    // cast kernels run between them, forward or backward (model.cpp).
    if (cfg_.bf16_applied()) fusions.push_back("layer_norm_outputs_in_bf16");
    nlohmann::json not_used = nlohmann::json::array();
    const fused::EpilogueMode lt_mode = fused::epilogue_mode();
    const std::string lt_knob = fmt::format("{}={}", fused::kEpilogueModeEnv, fused::epilogue_mode_name(lt_mode));
    if (cuda && epilogues > 0)
      fusions.push_back(lt_mode == fused::EpilogueMode::kAll
                            ? "cublaslt_epilogues: bias, GELU_AUX_BIAS, DGELU_BGRAD, BGRADB"
                            : "cublaslt_epilogues: bias, BGRADB");
    if (cuda && lt_mode != fused::EpilogueMode::kAll)
      not_used.push_back(
          {{"name", lt_mode == fused::EpilogueMode::kBias ? "cublaslt_gelu_epilogues" : "cublaslt_epilogues"},
           {"reason", lt_knob + ": left to separate ATen kernels"}});
    if (fallbacks > 0)
      not_used.push_back({{"name", "cublaslt_epilogues"},
                          {"reason", fmt::format("{} GEMMs fell back to separate ATen ops; last: {}", fallbacks,
                                                 lin.last_fallback)}});
    if (!cuda)
      not_used.push_back({{"name", "cublaslt_epilogues"},
                          {"reason", "CUDA only: on CPU the linears run as ATen addmm/gelu/gelu_backward"}});
    if (flat_grads_) {
      fusions.push_back("flat_gradient_buffer");
      // The linears' and lm_head's weight gradients are added into it in place.
      if (model_->options().weight_grads_into_buffers) fusions.push_back("weight_grads_added_into_buffer");
      // The clip's scaling inside the AdamW kernel (clip_and_update).
      if (optimizer_->divides_gradients_in_kernel()) fusions.push_back("clip_inside_fused_adamw");
    }
    if (graph) fusions.push_back(optimizer_in_graph_ ? "cuda_graph_whole_step" : "cuda_graph_forward_backward");
    const bool ran = ln > 0 && ce > 0 && mlp > 0 && lb > 0 &&
                     (!cuda || epilogues > 0 || lt_mode == fused::EpilogueMode::kNone) && (!use_graph_ || graph);
    const std::string lt = lt_mode == fused::EpilogueMode::kAll
                               ? "cuBLASLt epilogues"
                               : fmt::format("{} ({})",
                                             lt_mode == fused::EpilogueMode::kBias ? "cuBLASLt bias epilogues only"
                                                                                   : "no cuBLASLt epilogues",
                                             lt_knob);
    const std::string how =
        graph && optimizer_in_graph_
            ? fmt::format("custom fused kernels, {} and CUDA graphs, the step's last micro-step's with clip and "
                          "fused AdamW (one graph per step without accumulation)",
                          lt)
        : graph ? fmt::format("custom fused kernels, {} and a CUDA graph per micro-step (the optimizer runs eagerly: "
                              "it needs fused-adamw to be captured)",
                              lt)
        : use_graph_ ? "custom fused kernels, but no CUDA graph was captured"
        : cuda       ? fmt::format("custom fused kernels and {}; no CUDA graph (the ddp hooks run on the host)", lt)
                     : "custom fused CPU ops; CUDA graphs need CUDA";
    j["fused"] = on(ran, "ladder::fused ops (CPU loops / CUDA kernels, cuBLASLt epilogues)",
                    fmt::format("{}; ladder::add_layer_norm ran {} times, ladder::classifier_cross_entropy {}, "
                                "ladder::mlp_gelu {}, ladder::linear_bias {}; {} GEMMs with a cuBLASLt epilogue, {} "
                                "fell back (a GEMM whose GELU epilogue fell back retries with the bias epilogue "
                                "and counts again; a graph replay calls none of them)",
                                how, ln, ce, mlp, lb, epilogues, fallbacks));
    j["fused"]["fusions_active"] = fusions;
    j["fused"]["fusions_not_used"] = not_used;
    if (use_graph_) {
      j["fused"]["cuda_graph"] = {
          {"optimizer_in_graph", optimizer_in_graph_},
          {"graph_launches_per_step", cfg_.micro_steps()},
          {"graph_launches_total", graph_replays_},
          {"steps_total", steps_run_}};
    }
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
