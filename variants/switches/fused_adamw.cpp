// variants/switches/fused_adamw.cpp: AdamW as one multi-tensor kernel per
// parameter group (at::_fused_adamw_, variants/optim/optim.h).
#include "variants/switches/switch.h"

#include <fmt/format.h>

#include "variants/optim/optim.h"

namespace ladder::switches {

extern const SwitchDecl fused_adamw = {
    "fused-adamw", 600, SwitchRole::kRung, nullptr,
    "multi-tensor fused AdamW (_fused_adamw_)",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false,
    /*apply=*/nullptr,  // the step reads plan.acts(switches::fused_adamw)
    [](const SwitchFacts& f) {
      const int64_t calls = f.optimizer.fused_kernel_calls();
      return SwitchEffect::on(calls > 0, f.optimizer.name(),
                           fmt::format("at::_fused_adamw_ called {} times (one multi-tensor kernel per parameter "
                                       "group per step)",
                                       calls));
    },
    /*peers_base=*/true,  // the top rung that runs as one process: the peers reproduce its switches
};

}  // namespace ladder::switches
