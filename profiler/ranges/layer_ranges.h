// profiler/ranges/layer_ranges.h: per-layer ranges in the backward pass.
//
// The forward pass opens "layer <i>" around block i with a ScopedRange. The
// backward of block i runs inside the autograd engine, with no scope to hang
// a range on, so layer_boundary() puts an identity autograd node between two
// blocks. The engine runs that node once the gradient arriving there is
// complete, i.e. when the block above has finished its backward and before
// the block below starts: its backward closes the range of the block above
// (`close_layer`) and opens the range of the block below (`open_layer`), with
// profiler::begin_range / end_range. -1 means none. Used only with
// --layer-ranges; the gradients pass through unchanged.
//
// Weight-gradient accumulation of a block can run just after its range
// closes (the engine schedules AccumulateGrad nodes by readiness), so the
// ranges bound each block's input-gradient path exactly and its parameter
// updates approximately.
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace ladder::profiler {

// xs: the tensors that cross from one block to the next (the residual
// stream, and on the fused path also the normalised stream), returned as
// they are.
std::vector<torch::Tensor> layer_boundary(const std::vector<torch::Tensor>& xs, int64_t close_layer,
                                          int64_t open_layer);

}  // namespace ladder::profiler
