// variants/switches/ddp.cpp: data parallel across ranks: weights broadcast
// from rank 0, gradients all-reduced in buckets during backward
// (variants/ddp/). It acts through the step's process group.
#include "variants/switches/switch.h"

#include <fmt/format.h>

#include "variants/config/config.h"
#include "variants/ddp/grad_sync.h"
#include "variants/ddp/process_group.h"

namespace ladder::switches {

extern const SwitchDecl ddp = {
    "ddp", 800, SwitchRole::kRung, nullptr,
    "data parallel across ranks",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false, /*apply=*/nullptr,
    [](const SwitchFacts& f) {
      auto j = SwitchEffect::on(f.pg->world_size() > 1,
                             fmt::format("c10d {} bucketed all-reduce overlapped with backward", f.pg->backend_name()),
                             fmt::format("{} rank(s); each reads its own rows of the token stream",
                                         f.pg->world_size()));
      j.grad_sync = f.sync->describe();
      // One rank (asked for: --rungs ddp on one GPU, --nproc-per-node 1): its
      // all-reduce runs, but there is nothing to run in parallel with.
      if (f.pg->world_size() == 1) j.applicable = false;
      return j;
    },
};

}  // namespace ladder::switches
