// variants/graph_step.h: one micro-step (forward + backward) captured in a
// CUDA graph and replayed, to remove per-kernel launch overhead (the fused
// rung on CUDA). Inputs are copied into static buffers before each replay;
// gradients accumulate into the parameters' existing .grad buffers, so the
// optimizer must zero them without freeing (zero_grad(set_to_none=false)).
// Clipping and the optimizer run eagerly after the replays.
#pragma once

#include <functional>
#include <memory>

#include <torch/torch.h>

namespace ladder {

// x, y: (B, T) int64 on the device; returns the (scaled) loss, a () tensor.
using MicroStepFn = std::function<torch::Tensor(const torch::Tensor& x, const torch::Tensor& y)>;

class GraphedMicroStep {
 public:
  virtual ~GraphedMicroStep() = default;
  // Copies x, y (B, T) into the graph's inputs, replays, returns its loss buffer.
  virtual torch::Tensor run(const torch::Tensor& x, const torch::Tensor& y) = 0;
};

// Warms fn up on a side stream, then captures it. Only with LADDER_WITH_CUDA;
// elsewhere it throws a clear error.
std::unique_ptr<GraphedMicroStep> capture_micro_step(const MicroStepFn& fn, const torch::Tensor& x,
                                                      const torch::Tensor& y);

}  // namespace ladder
