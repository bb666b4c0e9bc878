// variants/step/graph_step.h: a training step, or one micro-step of it, captured
// in a CUDA graph and replayed, so the step launches one graph instead of
// hundreds of kernels (the fused rung on CUDA).
//
// The body is what the graph holds: forward and backward, and on the step's
// last micro-step also the clip, the capturable fused AdamW and the zeroing of
// the gradients when the rung has fused AdamW (variants/step/step.cpp). Inputs are
// copied into static buffers before each replay; gradients accumulate into
// buffers that exist before the capture (variants/ops/grad_buffer.h), and the
// outputs are static buffers that the next replay overwrites.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace ladder {

// x, y: (B, T) int64 on the device; returns the body's outputs ((), the
// scaled loss first).
using StepFn = std::function<std::vector<torch::Tensor>(const torch::Tensor& x, const torch::Tensor& y)>;

class GraphedStep {
 public:
  virtual ~GraphedStep() = default;
  // Copies x, y (B, T) into the graph's inputs, replays, and returns its
  // output buffers (valid until the next replay).
  virtual std::vector<torch::Tensor> run(const torch::Tensor& x, const torch::Tensor& y) = 0;
};

// A private memory pool that graphs replayed one after another on one stream,
// never concurrently, can share (the micro-step and the last micro-step of
// gradient accumulation): their activations then occupy one set of blocks.
using GraphPoolId = std::pair<unsigned long long, unsigned long long>;
GraphPoolId new_graph_pool();

// Runs `warmup` warmup_runs times on a side stream, so that lazy
// initialisation (cuBLAS handles, workspaces, autograd threads) happens
// outside the capture, then captures `body` once into `pool`. The warm-up
// leaves gradients behind: the caller zeroes them. Only with LADDER_WITH_CUDA;
// elsewhere it throws a clear error.
std::unique_ptr<GraphedStep> capture_step(const StepFn& warmup, int warmup_runs, const StepFn& body,
                                          const torch::Tensor& x, const torch::Tensor& y, GraphPoolId pool);

}  // namespace ladder
