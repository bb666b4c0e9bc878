// variants/ops/grad_scale/grad_scale.h: every gradient times a constant, in
// place, one pass over each (the shape of a static loss scale's unscaling).
// The grad-scale switch runs it at 1.0 before the clip: a no-op, there to
// show an op in one folder (its reference, switch, test and micro-benchmark
// beside it).
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace ladder::fused {

// Each defined gradient of `params` times `scale`, in place: a CPU float32
// gradient in one parallel pass of its own, any other by ATen (mul_).
void grad_scale_(const std::vector<torch::Tensor>& params, double scale);

// The reference: new tensors, each defined gradient times `scale` by ATen.
std::vector<torch::Tensor> grad_scale_reference(const std::vector<torch::Tensor>& params, double scale);

// grad_scale_ calls in this process (the switch reports whether it ran).
int64_t grad_scale_calls();

}  // namespace ladder::fused
