// variants/ddp/zero1.h: ZeRO stage 1 (Rajbhandari et al., 2020) on the ddp
// rung: the optimizer state sharded over the ranks.
//
// Gradients are all-reduced as the ddp rung does (GradientSync, overlapped
// with backward), so every rank holds the whole averaged gradient and
// computes the same clip norm. The parameters, in model order, become views
// of one flat buffer, cut into R equal ranges (the last padded), as
// DeepSpeed's stage 1 cuts them: rank r owns range r, keeps AdamW's two
// moments for those elements only and steps them, with the optimizer the rung
// would use (the per-parameter or the fused AdamW) over the pieces of
// parameters that fall in its range, each in the weight-decay group of its
// parameter. Then every range goes from its owner to the others, one
// broadcast per rank straight into their parameters, in rank order on every
// rank. AdamW is elementwise, so the maths is the ddp rung's exactly.
//
// Per rank this keeps 2W/R of optimizer state instead of 2W (W the fp32
// parameter bytes, R the ranks), whatever the sizes of the tensors (GPT-2's
// embedding is a third of the 124M model), for R broadcasts per step that
// move W in all (about (R-1)/R W sent per rank on a ring). The gather sits
// in the optimizer phase, after this rank's AdamW and before the next
// forward, and overlaps nothing: the comm observer hears its bytes and host
// time, and traces show it as the "zero1 parameter gather" range.
//
// Why the gradients are all-reduced and not reduce-scattered: on the CPU the
// reduce-scatter would save nothing, because c10d's Gloo backend has none of
// its own: ProcessGroupGloo::_reduce_scatter_base clones the input,
// all-reduces the clone and copies this rank's chunk out (and its work has no
// future for the comm clock). Under NCCL a real reduce-scatter would halve
// the gradients' traffic, to ddp's total with the gather; it would also need
// the global clip norm as a scalar all-reduce of the shards' squared norms,
// and the ranks' ranges cut along the overlapped buckets (rank r owning slice
// r of every bucket) for the overlap with backward to stay. Not built: no GPU
// has run this code yet, and one path for both backends is measured here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/torch.h>

#include "variants/config/config.h"
#include "variants/config/switch_effect.h"
#include "variants/optim/optim.h"

namespace ladder {

class CommObserver;
class ProcessGroup;

// A piece of one tensor in a rank's range: elements [begin, end) of tensor
// `index` (flattened).
struct ShardPiece {
  size_t index;
  int64_t begin, end;
};
// The equal ranges of tensors of these element counts, laid end to end, over
// `world_size` ranks: ceil(total / world_size) elements each (the last rank's
// range ends at the total), as the pieces of tensors each range covers.
std::vector<std::vector<ShardPiece>> shard_ranges(const std::vector<int64_t>& numels, int world_size);
// The elements a rank's pieces cover.
int64_t shard_elements(const std::vector<ShardPiece>& pieces);

class ShardedOptimizer final : public StepOptimizer {
 public:
  // `params` in model order, on one device and of one dtype; `fused` picks
  // the AdamW of this rank's range (make_optimizer). The parameters become
  // views of one flat buffer (their values kept): build it before anything
  // that holds their storage (a CUDA graph, a flat gradient buffer).
  ShardedOptimizer(const std::vector<torch::Tensor>& params, const TrainConfig& cfg, bool fused, ProcessGroup& pg);
  ~ShardedOptimizer() override;

  // This rank's range steps, then every range is broadcast from its owner.
  void step(double lr, const torch::Tensor& grad_divisor) override;
  void zero_grad(bool set_to_none) override;
  // Who hears the next steps' gathers (null: no one); the step sets it.
  void set_observer(CommObserver* comm) { comm_ = comm; }
  const char* name() const override { return name_.c_str(); }
  int64_t fused_kernel_calls() const override;

  // Each rank's elements and optimizer-state bytes, this rank's and the
  // unsharded total, and the parameter bytes broadcast per step.
  Zero1Sharding describe() const;

 private:
  // Points each piece's .grad() at its part of its parameter's gradient.
  void attach_gradients();

  ProcessGroup& pg_;
  std::vector<torch::Tensor> params_;
  torch::Tensor flat_;  // every parameter, in model order, padded to R equal ranges
  int64_t range_ = 0;   // elements per rank
  std::vector<std::vector<ShardPiece>> ranges_;
  std::vector<torch::Tensor> pieces_;  // this rank's pieces: views of flat_ that its optimizer steps
  std::unique_ptr<StepOptimizer> inner_;  // null when this rank's range is empty
  std::string name_;
  CommObserver* comm_ = nullptr;
};

}  // namespace ladder
