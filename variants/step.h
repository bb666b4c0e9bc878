// variants/step.h: the one GPT-2 training step every rung runs.
//
// A step is four phases: data (fetch and copy the batch), forward (logits and
// loss), backward, optimizer (clip, schedule, AdamW, zero grads). The step
// never reads a clock: it announces phase boundaries to a PhaseObserver, and
// the harness (timing) or profiler (ranges) decides what to do with them.
// Results stay on the device as tensors so the step adds no synchronisation.
#pragma once

#include <memory>

#include <torch/torch.h>

#include "variants/config.h"
#include "variants/data.h"
#include "variants/model.h"

namespace ladder {

enum class Phase { kData, kForward, kBackward, kOptimizer };
inline constexpr Phase kPhases[] = {Phase::kData, Phase::kForward, Phase::kBackward,
                                    Phase::kOptimizer};
const char* phase_name(Phase p);

class PhaseObserver {
 public:
  virtual ~PhaseObserver() = default;
  virtual void begin(Phase) {}
  virtual void end(Phase) {}
};

struct StepOutput {
  torch::Tensor loss;       // () float32, mean over the step's tokens
  torch::Tensor grad_norm;  // () float32, global L2 norm before clipping
  double lr = 0.0;
  int64_t tokens = 0;       // tokens processed by this step on this rank
};

class TrainStep {
 public:
  TrainStep(const RunConfig& cfg, torch::Device device, std::unique_ptr<TokenSource> data);

  // Runs optimizer step `step` (0-based, counting warmup steps).
  StepOutput run(int64_t step, PhaseObserver& observer);

  GPT& model() { return model_; }
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  const TokenSource& data() const { return *data_; }

 private:
  RunConfig cfg_;
  torch::Device device_;
  std::unique_ptr<TokenSource> data_;
  GPT model_{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  std::vector<torch::Tensor> params_;
  int64_t decay_steps_;
};

// clip_grad_norm_ without a host sync: foreach norms, one global norm, and a
// clamped scale, as PyTorch's foreach implementation. Returns the norm.
torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace ladder
