// variants/switches/zero1.cpp: ZeRO-1 on the ddp rung, beyond the ladder:
// each rank keeps and steps the AdamW state of its own shard of the
// parameters, and the updated shards are broadcast back
// (variants/ddp/zero1.h). It acts through the step's process group.
#include "variants/switches/switch.h"

#include <fmt/format.h>

#include "variants/config/config.h"
#include "variants/ddp/zero1.h"

namespace ladder::switches {

extern const SwitchDecl zero1 = {
    "zero1", 1010, SwitchRole::kExtra, nullptr,
    "ZeRO-1: the AdamW state sharded over the ddp ranks, each rank's updated parameters broadcast to the others",
    Numerics::kFp32Exact, {&ddp}, /*cuda_only=*/false,
    /*apply=*/nullptr,  // the step reads plan.acts(switches::zero1) where it has a process group
    [](const SwitchFacts& f) {
      const auto* sharded = dynamic_cast<const ShardedOptimizer*>(&f.optimizer);
      if (!sharded) return SwitchEffect::on(false, "ShardedOptimizer", "the step had no process group to shard over");
      Zero1Sharding d = sharded->describe();
      auto j = SwitchEffect::on(d.ranks > 1, f.optimizer.name(),
                                fmt::format("AdamW state {:.1f} MB on this rank instead of {:.1f} MB, over {} rank(s); "
                                            "{:.1f} MB of parameters broadcast per step",
                                            double(d.optimizer_state_bytes_this_rank) / 1e6,
                                            double(d.optimizer_state_bytes_unsharded) / 1e6, d.ranks,
                                            double(d.parameter_bytes_broadcast_per_step) / 1e6));
      j.sharding = std::move(d);
      return j;
    },
    /*peers_base=*/false, /*parity_same_rows=*/false,
    /*memory_mode=*/true,  // --mode memory runs it: it trades time for memory
};

}  // namespace ladder::switches
