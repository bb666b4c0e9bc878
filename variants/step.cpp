// variants/step.cpp: the shared training step (see step.h).
#include "variants/step.h"

#include "variants/optim.h"

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
// Opens a phase on construction and closes it on scope exit.
class PhaseScope {
 public:
  PhaseScope(PhaseObserver& o, Phase p) : o_(o), p_(p) { o_.begin(p_); }
  ~PhaseScope() { o_.end(p_); }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  PhaseObserver& o_;
  Phase p_;
};
}  // namespace

TrainStep::TrainStep(const RunConfig& cfg, torch::Device device, std::unique_ptr<TokenSource> data)
    : cfg_(cfg), device_(device), data_(std::move(data)) {
  model_ = GPT(cfg.model);
  init_gpt2_weights(model_, cfg.seed);
  model_->to(device_);
  model_->train();
  optimizer_ = make_adamw(model_, cfg.train);
  params_ = model_->parameters();
  decay_steps_ = cfg.train.lr_decay_steps > 0 ? cfg.train.lr_decay_steps : cfg.total_steps();
}

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

StepOutput TrainStep::run(int64_t step, PhaseObserver& observer) {
  StepOutput out;
  Batch batch;
  {
    PhaseScope s(observer, Phase::kData);
    batch = data_->batch(step);
    const bool non_blocking = device_.is_cuda();
    batch.x = batch.x.to(device_, non_blocking);  // (B, T)
    batch.y = batch.y.to(device_, non_blocking);  // (B, T)
  }
  out.tokens = batch.x.numel();
  torch::Tensor loss;
  {
    PhaseScope s(observer, Phase::kForward);
    auto logits = model_->forward(batch.x);  // (B, T, V)
    loss = lm_loss(logits, batch.y);         // ()
  }
  {
    PhaseScope s(observer, Phase::kBackward);
    loss.backward();
  }
  {
    PhaseScope s(observer, Phase::kOptimizer);
    out.grad_norm = clip_grad_norm(params_, cfg_.train.grad_clip);
    out.lr = learning_rate(cfg_.train, step, decay_steps_);
    set_learning_rate(*optimizer_, out.lr);
    optimizer_->step();
    optimizer_->zero_grad(/*set_to_none=*/true);
  }
  out.loss = loss.detach();
  return out;
}

}  // namespace ladder
