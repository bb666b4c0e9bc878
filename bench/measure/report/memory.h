// bench/measure/report/memory.h: an analytic estimate of training memory, reported beside
// the measured peak so a surprise in either is visible.
#pragma once

#include <cstdint>

#include "reports/model/report/memory_section.h"
#include "variants/config/config.h"

namespace ladder {

struct StepPlan;

// What a config's switches change in the estimate, per rank.
struct MemoryOptions {
  int64_t optimizer_shards = 1;    // zero1 on the ddp rung: the AdamW state divided over the ranks
  bool checkpoint_blocks = false;  // act-ckpt: every block's input kept, one block's activations at a time
};
// From the plan the config makes (plan_for).
MemoryOptions memory_options(const RunConfig& cfg, const StepPlan& plan);

// fp32 eager step with the explicit attention path, 4 bytes an element. Per
// layer, autograd keeps about 16 B*T*C elements (LN inputs and outputs, qkv,
// attention output, MLP hidden before and after GELU) plus the softmax
// output, n_head*B*T*T. Around the loss: ln_f in/out (2 B*T*C) and the
// log-softmax output and its gradient (2 B*T*V). Parameters and gradients: N
// each; AdamW: 2N, or 2N/shards. With checkpointing, activations of L block
// inputs (B*T*C each) plus one block's (recomputed in backward) instead of L
// blocks'.
MemoryEstimate estimate_memory(const ModelConfig& m, int64_t n_params, int64_t batch, int64_t seq,
                               const MemoryOptions& o = {});

}  // namespace ladder
