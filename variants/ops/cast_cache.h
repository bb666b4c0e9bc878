// variants/ops/cast_cache.h: the parameters' compute-dtype (bf16) copies, made
// once per optimizer step instead of once per micro-step (cast-cache, a part
// of fused).
//
// Under bf16 autocast the fused ops (variants/fused_linear/fused_linear.h) cast each fp32
// weight and bias to bf16 in their forward. With gradient accumulation the
// same unchanged weights are cast in every micro-step: at m = 4 on an H100,
// 436 casts and 1.68 ms a step (2026-11-27). The weights change only in the
// optimizer, so the step refreshes these copies right after it (inside the
// last micro-step's CUDA graph when the optimizer is captured there), in one
// multi-tensor copy, and every micro-step's forward reads them.
//
// Whoever changes the parameters refreshes the copies: the step does after
// every update (TrainStep::clip_and_update). A parameter's version counter is
// the safety net for the rest: a copy is handed out only while the counter is
// the one it was made from, so a parameter changed by an ordinary in-place op
// since (a load, a test) is cast afresh by the op. Not every writer moves the
// counter: _fused_adamw_ does not (torch 2.11, CPU: without the step's refresh
// the next step reads the old weights, tests/variants/test_cast_cache.cpp), hence the
// refresh. The copies keep their addresses across refreshes, as a captured
// graph that reads them needs.
#pragma once

#include <atomic>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <torch/torch.h>

#include "variants/ops/work.h"

namespace ladder {

class CastCache {
 public:
  explicit CastCache(at::ScalarType dtype);  // at::kBFloat16 for the bf16 rung

  // Tracks `params` (instead of any tracked before) and makes their copies.
  // Floating-point parameters of another dtype than the cache's; others are
  // left out (nothing to cast).
  void track(const std::vector<torch::Tensor>& params);
  // Casts every tracked parameter into its copy (one _foreach_copy_ on the
  // current stream, no host sync) and notes each parameter's version.
  void refresh();
  // `param`'s copy when it is tracked, `dtype` is the cache's and the copy is
  // fresh; else an undefined tensor (the caller casts). Counts a read, or a
  // stale copy.
  torch::Tensor find(const torch::Tensor& param, at::ScalarType dtype) const;

  struct Stats {
    int64_t parameters = 0;   // tracked
    int64_t elements = 0;     // in their copies
    int64_t bytes = 0;        // of the copies
    int64_t refreshes = 0;    // refresh() calls
    int64_t reads = 0;        // find() that returned a copy (a CUDA graph's replay calls none)
    int64_t stale = 0;        // find() of a tracked parameter changed since the last refresh
  };
  Stats stats() const;

 private:
  at::ScalarType dtype_;
  // The tracked, in track()'s order (refresh's lists): each parameter (a
  // handle sharing its version counter), its copy ((param's sizes) in dtype_,
  // contiguous) and the parameter's version when the copy was made.
  std::vector<torch::Tensor> params_, copies_;
  std::vector<int64_t> versions_;
  std::unordered_map<const c10::TensorImpl*, size_t> index_;  // a parameter's place in those
  int64_t refreshes_ = 0;
  mutable std::atomic<int64_t> reads_{0}, stale_{0};  // find() may run on autograd's threads (act-ckpt)
};

// The bf16 casts' sites in a step's work (variants/ops/work.h), under bf16
// autocast only: each weight and bias of the block linears and wte cast to
// bf16 in every forward (the blocks' again in act-ckpt's recompute), or once
// per optimizer step after the update for those this cache holds (in the
// optimizer phase); the weight gradients cast back to fp32 where they do
// not go into the flat buffer; and where no fused LayerNorm hands the next
// matmul bf16, each LayerNorm's output cast to bf16 (ln_1, ln_2, ln_f) and
// its gradient back.
void add_cast_work(const WorkShape& shape, const WorkFlags& flags, WorkList& work);

}  // namespace ladder
