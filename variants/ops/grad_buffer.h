// variants/ops/grad_buffer.h: every parameter's gradient as a view into one flat
// buffer (the fused rung in one process; the ddp rung has its own buckets).
//
// Zeroing the gradients is then one memset, and the global-norm clip is one
// norm over the buffer and one in-place scale, instead of a kernel (or a
// multi-tensor launch) per parameter. Backward's AccumulateGrad adds into the
// existing views in place, so they stay views as long as nobody sets a
// gradient to None: the step zeroes through zero(), never the optimizer's
// zero_grad. Everything runs on the device without a host sync, so zero() and
// clip() can be captured in a CUDA graph.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "variants/ops/work.h"

namespace ladder {

// clip_grad_norm_'s scale for a global norm `norm` (a () tensor):
// min(1, max_norm / (norm + 1e-6)), as PyTorch; stays on the device.
torch::Tensor clip_coefficient(const torch::Tensor& norm, double max_norm);

// The global L2 norm of the gradients, () on their device. On CUDA as
// PyTorch's clip_grad_norm_(foreach=True) computes it: one norm per tensor
// (_foreach_norm), then the norm of those norms. On a CPU by rows of 16384
// values: each row's norm in fp32, then the norm of all rows' norms in fp64.
// ATen's fp32 CPU norm of one long vector accumulates in float and drifts
// with its length (relative error 6e-4 at 16M values, 1.3e-2 at GPT-2
// small's 124M on an AVX2 CPU, issue 24; 2.7e-3 at wte's 38.6M on a Xeon,
// which is what _foreach_norm, and so PyTorch's clip_grad_norm_, computes
// there), and its full reduction ran at half the speed of the same norm
// by rows (47 against 24 ms over 124M fp32 values, 2-vCPU Xeon, 2026-11-29).
// By rows the norm is within 1e-6 of fp64's at any length. So it is not
// PyTorch's to the last bits: the fp32-exact parity runs (parity_c768.*,
// scripts/reference.py parity) hold the norm to the fp64 norm of PyTorch's
// gradients, allowed PyTorch's own fp32 error there plus the tolerance.
torch::Tensor global_grad_norm(const std::vector<torch::Tensor>& grads);

// First writes, on a CPU: the fused ops hand their parameters' gradients
// into the buffer themselves (LinearOptions::grads_into_buffers), each
// segment whole (a weight by its GEMM, a bias by its sum). Those segments
// need no zeroing: the first write after zero() overwrites its segment
// (copy_, or the GEMM with beta 0) and later ones (the next micro-steps', and
// the embedding's into wte) add. The 496 MB memset of gpt2-124m's buffer took
// 31 ms of a 940 ms step on a 2-vCPU Xeon (2026-11-29); the segments left to
// zero() are the other 6 %.
class FirstWrites {
 public:
  // True when `grad` is one of the owned segments and not yet written since
  // the last reset: the caller overwrites it, and it counts as written.
  // False: the caller adds into it.
  bool claim(const torch::Tensor& grad);
  // The FirstWrites whose buffer holds `grad`; null where none does (a
  // gradient outside any flat buffer, a CUDA step, the planner's operands).
  static std::shared_ptr<FirstWrites> of(const torch::Tensor& grad);
  // What a writer of `grad` asks: of(grad)'s claim, false where there is none.
  static bool claim_first(const torch::Tensor& grad) {
    const auto fw = of(grad);
    return fw && fw->claim(grad);
  }
  bool owns(const torch::Tensor& grad) const { return owned_.count(grad.data_ptr()) > 0; }

 private:
  friend class FlatGradients;
  const char* begin_ = nullptr;
  const char* end_ = nullptr;
  std::unordered_map<const void*, size_t> owned_;  // a segment's first byte -> its index in written_
  std::vector<char> written_;
};

class FlatGradients {
 public:
  // Each view starts at a multiple of kAlignElements, so multi-tensor and
  // vectorised kernels see aligned gradients; the gaps stay zero. All
  // parameters must share one device and dtype.
  static constexpr int64_t kAlignElements = 64;  // 256 bytes of fp32

  explicit FlatGradients(const std::vector<torch::Tensor>& params);

  void zero();  // one memset of the buffer (with first writes: of the segments not owned)
  // First writes for `owned` (parameters among those this object was built
  // with, whose gradients the fused ops write whole); see FirstWrites.
  void write_first(const std::vector<torch::Tensor>& owned);
  // With first writes: throws (naming how many) when an owned segment was not
  // written since zero(), whose old gradient would otherwise reach the
  // optimizer. Call after the last micro-step's backward.
  void check_first_writes() const;
  bool writes_first() const { return first_writes_ != nullptr; }
  // clip_grad_norm_ over the buffer: returns the global L2 norm before
  // clipping (global_grad_norm of the views), a () tensor, and scales the
  // whole buffer by min(1, max_norm / (norm + 1e-6)) in one pass.
  torch::Tensor clip(double max_norm);
  // The same clip, left for the optimizer to apply: returns {the global L2
  // norm, the divisor max(1, (norm + 1e-6) / max_norm)} as () tensors and
  // changes nothing. StepOptimizer::step(lr, divisor) then divides inside its
  // update (the fused AdamW in its own kernel), saving clip()'s pass over
  // the buffer.
  std::pair<torch::Tensor, torch::Tensor> clip_divisor(double max_norm) const;
  // global_grad_norm of the views (on a CPU of the buffer as one tensor: the
  // same values and zeros between them, in one call). () on the device.
  torch::Tensor norm() const;

  const torch::Tensor& buffer() const { return buffer_; }  // (numel incl. padding)
  const std::vector<torch::Tensor>& grads() const { return grads_; }  // the views, one per parameter
  // Whether every parameter's .grad() is still the view this object set.
  bool intact() const;

 private:
  std::vector<torch::Tensor> params_;
  std::vector<int64_t> offsets_;
  torch::Tensor buffer_;
  std::vector<torch::Tensor> grads_;  // params_[i].grad() as set here
  std::shared_ptr<FirstWrites> first_writes_;
};

// The gradients' own sites in a step's work (variants/ops/work.h): wte's two
// gradients (the embedding's and the lm_head's) summed before they reach
// .grad, where neither is added into the buffer by its op; every
// gradient autograd hands over added into its .grad when one is there (each
// micro-step with the flat buffer or the ddp rung's buckets, which stay and
// are zeroed; from the second micro-step otherwise, the first one's taken
// over); and the buffer zeroed once a step, in the optimizer phase.
void add_gradient_work(const WorkShape& shape, const WorkFlags& flags, WorkList& work);

}  // namespace ladder
