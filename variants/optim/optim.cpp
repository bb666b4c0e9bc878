// variants/optim/optim.cpp: AdamW parameter groups and the LR schedule (see optim.h).
#include "variants/optim/optim.h"

#include <cmath>
#include <optional>

namespace ladder {

ParamGroups gpt2_param_groups(const std::vector<torch::Tensor>& params) {
  ParamGroups g;
  for (const auto& p : params) (p.dim() >= 2 ? g.decay : g.no_decay).push_back(p);
  return g;
}

std::unique_ptr<torch::optim::AdamW> make_adamw(GPT& model, const TrainConfig& cfg) {
  return make_adamw(gpt2_param_groups(model->parameters()), cfg);
}

std::unique_ptr<torch::optim::AdamW> make_adamw(const ParamGroups& g, const TrainConfig& cfg) {
  const std::vector<torch::Tensor>& decay = g.decay;
  const std::vector<torch::Tensor>& no_decay = g.no_decay;
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(cfg.max_lr)
            .betas({cfg.beta1, cfg.beta2})
            .eps(cfg.eps)
            .weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty()) groups.emplace_back(decay, options(cfg.weight_decay));  // a shard may lack one
  if (!no_decay.empty()) groups.emplace_back(no_decay, options(0.0));
  return std::make_unique<torch::optim::AdamW>(std::move(groups),
                                               torch::optim::AdamWOptions(cfg.max_lr));
}

double learning_rate(const TrainConfig& cfg, int64_t step, int64_t decay_steps) {
  const double min_lr = cfg.max_lr * cfg.min_lr_ratio;
  if (step < cfg.lr_warmup_steps) return cfg.max_lr * double(step + 1) / double(cfg.lr_warmup_steps);
  if (step > decay_steps) return min_lr;
  const int64_t span = decay_steps - cfg.lr_warmup_steps;
  if (span <= 0) return cfg.max_lr;
  const double ratio = double(step - cfg.lr_warmup_steps) / double(span);
  const double coeff = 0.5 * (1.0 + std::cos(M_PI * ratio));  // 1 -> 0
  return min_lr + coeff * (cfg.max_lr - min_lr);
}

void set_learning_rate(torch::optim::Optimizer& opt, double lr) {
  for (auto& group : opt.param_groups()) group.options().set_lr(lr);
}

void zero_gradients(const std::vector<torch::Tensor>& params, bool set_to_none) {
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.mutable_grad().reset();
    } else {
      p.mutable_grad().detach_();
      p.mutable_grad().zero_();
    }
  }
}

void StepOptimizer::set_device_lr(double) {
  TORCH_CHECK(false, name(), " cannot take its LR from a device tensor (only at::_fused_adamw_ can)");
}
void StepOptimizer::step_device_lr(const torch::Tensor&) {
  TORCH_CHECK(false, name(), " cannot take its LR from a device tensor (only at::_fused_adamw_ can)");
}

namespace {

class TorchAdamW final : public StepOptimizer {
 public:
  TorchAdamW(const ParamGroups& groups, const TrainConfig& cfg) : opt_(make_adamw(groups, cfg)) {}
  void step(double lr, const torch::Tensor& grad_divisor) override {
    if (grad_divisor.defined()) {
      torch::NoGradGuard no_grad;
      std::vector<torch::Tensor> grads;
      for (auto& group : opt_->param_groups())
        for (auto& p : group.params())
          if (p.grad().defined()) grads.push_back(p.grad());
      torch::_foreach_div_(grads, grad_divisor);
    }
    set_learning_rate(*opt_, lr);
    opt_->step();
  }
  void zero_grad(bool set_to_none) override { opt_->zero_grad(set_to_none); }
  const char* name() const override { return "torch::optim::AdamW"; }

 private:
  std::unique_ptr<torch::optim::AdamW> opt_;
};

// One _fused_adamw_ call per parameter group updates every tensor of the
// group in a single multi-tensor kernel (CUDA) or one fused loop (CPU).
class FusedAdamW final : public StepOptimizer {
 public:
  FusedAdamW(const ParamGroups& groups, const TrainConfig& cfg) : cfg_(cfg) {
    Group decay{{}, {}, {}, {}, cfg.weight_decay}, no_decay{{}, {}, {}, {}, 0.0};
    for (auto [params, g] : {std::pair{&groups.decay, &decay}, std::pair{&groups.no_decay, &no_decay}})
      for (const auto& p : *params) {
        g->params.push_back(p);
        g->exp_avgs.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        g->exp_avg_sqs.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        g->steps.push_back(torch::zeros({}, p.options().dtype(torch::kFloat32)));
      }
    // A shard may hold no tensor of a group: _fused_adamw_ is not called on an empty list.
    for (Group* g : {&decay, &no_decay})
      if (!g->params.empty()) groups_.push_back(std::move(*g));
  }

  void step(double lr, const torch::Tensor& grad_divisor) override { update(lr, nullptr, grad_divisor); }
  bool divides_gradients_in_kernel() const override { return true; }

  bool supports_device_lr() const override { return true; }
  void set_device_lr(double lr) override { device_lr().fill_(lr); }
  void step_device_lr(const torch::Tensor& grad_divisor) override { update(0.0, &device_lr(), grad_divisor); }
  void warm_up_device_lr_step() override {
    torch::NoGradGuard no_grad;
    const auto options = groups_[0].params[0].options();
    auto one = [&] { return torch::zeros({1}, options); };
    std::vector<torch::Tensor> params{one()}, grads{one()}, exp_avgs{one()}, exp_avg_sqs{one()};
    std::vector<torch::Tensor> steps{torch::zeros({}, options.dtype(torch::kFloat32))};
    torch::_foreach_add_(steps, 1);
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps, device_lr(), cfg_.beta1,
                      cfg_.beta2, groups_[0].weight_decay, cfg_.eps, /*amsgrad=*/false, /*maximize=*/false,
                      /*grad_scale=*/torch::ones({}, options.dtype(torch::kFloat32)), /*found_inf=*/std::nullopt);
  }

  void zero_grad(bool set_to_none) override {
    for (const auto& g : groups_) zero_gradients(g.params, set_to_none);
  }
  const char* name() const override { return "at::_fused_adamw_"; }
  int64_t fused_kernel_calls() const override { return calls_; }

 private:
  // One update of every group: lr from the host, or from `lr_tensor` (a ()
  // float32 tensor on the parameters' device) when given. The step counts are
  // device tensors either way, so both forms can be captured. grad_divisor
  // (may be undefined) is the kernel's grad_scale: it divides each gradient,
  // and stores the result back, inside the same pass as the update.
  void update(double lr, const torch::Tensor* lr_tensor, const torch::Tensor& grad_divisor) {
    const std::optional<torch::Tensor> grad_scale =
        grad_divisor.defined() ? std::optional<torch::Tensor>(grad_divisor.to(torch::kFloat)) : std::nullopt;
    torch::NoGradGuard no_grad;
    for (auto& g : groups_) {
      std::vector<torch::Tensor> grads;
      grads.reserve(g.params.size());
      for (auto& p : g.params) grads.push_back(p.grad());
      torch::_foreach_add_(g.steps, 1);
      if (lr_tensor) {
        at::_fused_adamw_(g.params, grads, g.exp_avgs, g.exp_avg_sqs, /*max_exp_avg_sqs=*/{}, g.steps,
                          *lr_tensor, cfg_.beta1, cfg_.beta2, g.weight_decay, cfg_.eps,
                          /*amsgrad=*/false, /*maximize=*/false, grad_scale, /*found_inf=*/std::nullopt);
      } else {
        at::_fused_adamw_(g.params, grads, g.exp_avgs, g.exp_avg_sqs, /*max_exp_avg_sqs=*/{}, g.steps, lr,
                          cfg_.beta1, cfg_.beta2, g.weight_decay, cfg_.eps,
                          /*amsgrad=*/false, /*maximize=*/false, grad_scale, /*found_inf=*/std::nullopt);
      }
      ++calls_;
    }
  }

  torch::Tensor& device_lr() {
    if (!lr_.defined()) lr_ = torch::zeros({}, groups_[0].params[0].options().dtype(torch::kFloat32));
    return lr_;
  }

  torch::Tensor lr_;  // () float32 on the parameters' device
  int64_t calls_ = 0;
  struct Group {
    std::vector<torch::Tensor> params, exp_avgs, exp_avg_sqs, steps;
    double weight_decay;
  };
  TrainConfig cfg_;
  std::vector<Group> groups_;
};

}  // namespace

std::unique_ptr<StepOptimizer> make_optimizer(GPT& model, const TrainConfig& cfg, bool fused) {
  return make_optimizer(gpt2_param_groups(model->parameters()), cfg, fused);
}

std::unique_ptr<StepOptimizer> make_optimizer(const ParamGroups& groups, const TrainConfig& cfg, bool fused) {
  if (fused) return std::make_unique<FusedAdamW>(groups, cfg);
  return std::make_unique<TorchAdamW>(groups, cfg);
}

void add_optimizer_work(const WorkShape&, const WorkFlags& f, WorkList& work) {
  using profiler::Category;
  const double P = double(f.n_params), shard = f.zero1 ? P / double(f.world) : P;
  work.memory("optimizer/grad norm", Category::kOptimizer, 1, P * 4, 0);
  // In a graph replay the device breakdown knows no phase: the clip's in-place scale is an elementwise kernel.
  const Category scale_band = f.optimizer_in_graph ? Category::kElementwiseNorm : Category::kOptimizer;
  if (!f.clip_in_kernel) work.memory("optimizer/clip scale", scale_band, 1, P * 4, P * 4);
  work.memory("optimizer/adamw", Category::kOptimizer, 1, shard * 16, shard * 12);
}

}  // namespace ladder
