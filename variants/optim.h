// variants/optim.h: AdamW with GPT-2's parameter groups, and the LR schedule.
#pragma once

#include <memory>

#include <torch/torch.h>

#include "variants/config.h"
#include "variants/model.h"

namespace ladder {

// AdamW(betas, eps) with two groups: weight decay on tensors of dim >= 2
// (matmul weights and embeddings), none on biases and LayerNorm gains.
std::unique_ptr<torch::optim::AdamW> make_adamw(GPT& model, const TrainConfig& cfg);

// build-nanogpt's get_lr: linear warmup over lr_warmup_steps, then cosine
// decay from max_lr to max_lr * min_lr_ratio at decay_steps, flat after.
double learning_rate(const TrainConfig& cfg, int64_t step, int64_t decay_steps);

void set_learning_rate(torch::optim::Optimizer& opt, double lr);

}  // namespace ladder
