// variants/optim.cpp: AdamW parameter groups and the LR schedule (see optim.h).
#include "variants/optim.h"

#include <cmath>

namespace ladder {

std::unique_ptr<torch::optim::AdamW> make_adamw(GPT& model, const TrainConfig& cfg) {
  std::vector<torch::Tensor> decay, no_decay;
  for (auto& p : model->parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(cfg.max_lr)
            .betas({cfg.beta1, cfg.beta2})
            .eps(cfg.eps)
            .weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, options(cfg.weight_decay));
  groups.emplace_back(no_decay, options(0.0));
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

}  // namespace ladder
