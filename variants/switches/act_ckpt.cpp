// variants/switches/act_ckpt.cpp: activation checkpointing, beyond the
// ladder: in forward each transformer block keeps only its inputs, and in
// backward it runs again to rebuild its activations (variants/model/model.cpp,
// ModelOptions::checkpoint_blocks), as torchtitan's full activation
// checkpointing does: the activations of one block instead of L, for one
// more forward of every block.
#include "variants/switches/switch.h"

#include <fmt/format.h>

#include "variants/model/model.h"

namespace ladder::switches {

extern const SwitchDecl act_ckpt = {
    "act-ckpt", 1000, SwitchRole::kExtra, nullptr,
    "activation checkpointing: each block's activations recomputed in backward instead of kept",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false,
    [](const RunConfig&, StepPlan& p) {
      p.model.checkpoint_blocks = true;
      // The recompute is a backward run from inside backward (reentrant);
      // ladder does not capture that in a CUDA graph.
      if (p.acts(switches::cuda_graph))
        p.stand_down(switches::cuda_graph, "act-ckpt recomputes each block in a backward inside backward, which ladder "
                                   "does not capture in a CUDA graph");
    },
    [](const SwitchFacts& f) {
      const int64_t n = block_recomputes();
      return SwitchEffect::on(n > 0, "each block's forward without autograd, run again in its backward",
                           fmt::format("{} block forwards recomputed in backward over {} steps", n, f.steps_run));
    },
    /*peers_base=*/false, /*parity_same_rows=*/false,
    /*memory_mode=*/true,  // --mode memory runs it: it trades time for memory
};

}  // namespace ladder::switches
