// variants/optim/optim.h: AdamW with GPT-2's parameter groups, and the LR schedule.
#pragma once

#include <memory>
#include <vector>

#include <torch/torch.h>

#include "variants/config/config.h"
#include "variants/model/model.h"
#include "variants/ops/work.h"

namespace ladder {

// What the step needs from an optimizer: one update at a given LR.
class StepOptimizer {
 public:
  virtual ~StepOptimizer() = default;
  // One update. grad_divisor, when defined (a () tensor on the parameters'
  // device), divides every gradient first and the divided gradient is what
  // stays in .grad(): the gradient clip (FlatGradients::clip_divisor). The
  // fused AdamW divides inside its own kernel (at::_fused_adamw_'s
  // grad_scale, with which AMP unscales), so the clip costs no pass of its
  // own over the gradients; the per-parameter AdamW divides first.
  virtual void step(double lr, const torch::Tensor& grad_divisor = {}) = 0;
  // Whether step() divides inside the update kernel (see above).
  virtual bool divides_gradients_in_kernel() const { return false; }
  // set_to_none = false keeps gradient buffers (a CUDA graph reuses them).
  virtual void zero_grad(bool set_to_none) = 0;
  virtual const char* name() const = 0;
  // Calls of at::_fused_adamw_ so far (0 for the per-parameter AdamW).
  virtual int64_t fused_kernel_calls() const { return 0; }

  // For a step captured in a CUDA graph the LR cannot be a host number baked
  // into the capture: it lives in a device tensor that set_device_lr() writes
  // before each replay (outside the graph) and step_device_lr() reads on the
  // device. Only the fused AdamW can (at::_fused_adamw_'s tensor-lr overload,
  // with its step counts already on the device).
  virtual bool supports_device_lr() const { return false; }
  virtual void set_device_lr(double lr);
  virtual void step_device_lr(const torch::Tensor& grad_divisor = {});
  // Runs the device-LR update's kernels once on scratch tensors (the model's
  // parameters untouched), so that their first launch, and the lazy loading
  // of their modules, happens before a CUDA graph captures them.
  virtual void warm_up_device_lr_step() {}
};

// torch::optim::AdamW (per-parameter loop) or the multi-tensor fused kernel
// (at::_fused_adamw_, CPU and CUDA), both with GPT-2's two groups.
std::unique_ptr<StepOptimizer> make_optimizer(GPT& model, const TrainConfig& cfg, bool fused);

// GPT-2's two parameter groups: weight decay on tensors of dim >= 2 (matmul
// weights and embeddings), none on biases and LayerNorm gains.
struct ParamGroups {
  std::vector<torch::Tensor> decay, no_decay;
};
ParamGroups gpt2_param_groups(const std::vector<torch::Tensor>& params);
// The same optimizers over given groups (ZeRO-1's pieces of parameters,
// variants/ddp/zero1.h); a group may be empty.
std::unique_ptr<StepOptimizer> make_optimizer(const ParamGroups& groups, const TrainConfig& cfg, bool fused);

// AdamW(betas, eps) with those two groups.
std::unique_ptr<torch::optim::AdamW> make_adamw(GPT& model, const TrainConfig& cfg);
std::unique_ptr<torch::optim::AdamW> make_adamw(const ParamGroups& groups, const TrainConfig& cfg);

// build-nanogpt's get_lr: linear warmup over lr_warmup_steps, then cosine
// decay from max_lr to max_lr * min_lr_ratio at decay_steps, flat after.
double learning_rate(const TrainConfig& cfg, int64_t step, int64_t decay_steps);

void set_learning_rate(torch::optim::Optimizer& opt, double lr);

// StepOptimizer::zero_grad over these parameters: each defined gradient reset
// (set_to_none) or zeroed in place, detached from any graph.
void zero_gradients(const std::vector<torch::Tensor>& params, bool set_to_none);

// The optimizer phase's sites in a step's work (variants/ops/work.h), once per
// optimizer step: the global gradient norm (reads every gradient), the
// clip's scaling (reads and writes them; none where the fused AdamW kernel
// applies it), and AdamW (reads parameter, gradient and both moments, writes
// parameter and moments: 28 bytes a parameter, fp32; with zero1 on this
// rank's shard). The fused and the per-parameter AdamW move the same
// compulsory bytes; the per-parameter one moves more in fact.
void add_optimizer_work(const WorkShape& shape, const WorkFlags& flags, WorkList& work);

}  // namespace ladder
