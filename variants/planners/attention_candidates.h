// variants/planners/attention_candidates.h: the attention plan's candidates run and
// timed (variants/planners/attention_plan.h), and the chosen backend applied to the
// step's scaled_dot_product_attention.
//
// A backend is chosen through ATen's SDP switches (at::globalContext():
// setSDPUseFlash, ...UseCuDNN, ...UseMemEfficient, ...UseMath): for B, C or D
// only that backend is on, so SDPA runs it or fails (no silent fallback to
// another); for A the switches are as the process found them. The switches
// are process-wide and read on the host at each call, so a CUDA graph
// captured after apply_attention_plan replays the chosen backend's kernels.
#pragma once

#include <string>
#include <vector>

#include <torch/torch.h>

#include "variants/planners/attention_plan.h"
#include "variants/config/config.h"
#include "variants/ops/attention/attention.h"

namespace ladder::attention {

// The candidates at (B, nh, T, hs) in `dtype` on `device` (A first): each
// run once, forward and backward, and checked against A (relative L2 of y,
// dq, dk and dv within `dtype`'s tolerance); one that throws or differs is
// kept as not run, with why.
std::vector<RunnableAttention> candidates(const AttentionPlanKey& key, const torch::Device& device,
                                          torch::ScalarType dtype);

// The flash rung's plan as --attention-plan asks (cfg.attention_plan):
// measured before the first step (or read from the cache) for auto, pinned
// otherwise. `dtype` is the attention's (bf16 under autocast), `dtype_name`
// its name in the key (bf16, fp32, tf32).
AttentionPlan plan_step_attention(const RunConfig& cfg, const torch::Device& device, torch::ScalarType dtype,
                                  const std::string& dtype_name);

// Makes every later scaled_dot_product_attention of this process run `p`'s
// choice (pytorch and explicit: the switches as the process found them); the
// model calls its attention as attention_call(p.backend()) says.
void apply_attention_plan(const AttentionPlan& p);
// How the model calls a backend's attention: explicit, SDPA on fp32 copies
// (flash-fp32) or SDPA (the others, by the switches).
AttentionCall attention_call(AttentionBackend b);

// ATen's SDP switches (at::globalContext()), as a value.
struct SdpSwitches {
  bool flash = true, efficient = true, math = true, cudnn = true;
  static SdpSwitches now();
  void set() const;
};

// ATen's SDP switches as they were when made, put back when it goes: a step
// holds one for its lifetime, so the backend its plan applied ends with it
// (a CUDA-only backend left on would leave a later CPU SDPA in the same
// process with none: the 2026-11-29 H200's unit tests).
class SavedSdpSwitches {
 public:
  SavedSdpSwitches() : before_(SdpSwitches::now()) {}
  ~SavedSdpSwitches() { before_.set(); }
  SavedSdpSwitches(const SavedSdpSwitches&) = delete;
  SavedSdpSwitches& operator=(const SavedSdpSwitches&) = delete;

 private:
  SdpSwitches before_;
};

// The SDPA backend PyTorch's heuristic picks for (B, nh, T, hs) in `dtype`
// with the switches as they are now: "math", "flash", "efficient", "cudnn".
std::string sdpa_pick(const AttentionPlanKey& key, const torch::Device& device, torch::ScalarType dtype);

}  // namespace ladder::attention
