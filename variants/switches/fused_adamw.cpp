// variants/switches/fused_adamw.cpp: AdamW as one multi-tensor kernel per
// parameter group (at::_fused_adamw_, variants/optim.h).
#include "variants/switches/switch.h"

#include <fmt/format.h>

#include "variants/optim.h"

namespace ladder::switches {

extern const SwitchDecl kFusedAdamw = {
    "fused-adamw", &Switches::fused_adamw, nullptr,
    "multi-tensor fused AdamW (_fused_adamw_)",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false,
    [](const RunConfig&, StepPlan& p) { p.fused_adamw = true; },
    [](const SwitchFacts& f) {
      const int64_t calls = f.optimizer.fused_kernel_calls();
      return switch_effect(calls > 0, f.optimizer.name(),
                           fmt::format("at::_fused_adamw_ called {} times (one multi-tensor kernel per parameter "
                                       "group per step)",
                                       calls));
    },
};

}  // namespace ladder::switches
