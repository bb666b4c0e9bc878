// variants/ops/grad_scale/grad_scale_switch.cpp: the gradients times 1.0
// before the clip (fused::grad_scale_): a no-op extra, an op's one folder
// shown whole.
#include "variants/switches/switch.h"

#include <fmt/format.h>

#include "variants/ops/grad_scale/grad_scale.h"

namespace ladder::switches {

extern const SwitchDecl grad_scale = {
    "grad-scale", 1020, SwitchRole::kExtra, nullptr,
    "every gradient times 1.0 before the clip, one pass each (a no-op: an op's one folder shown whole)",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false,
    nullptr,  // the step reads plan.acts(switches::grad_scale)
    [](const SwitchFacts&) {
      const int64_t calls = fused::grad_scale_calls();
      return switch_effect(calls > 0, "ladder::fused::grad_scale_",
                           fmt::format("fused::grad_scale_ ran {} times", calls));
    },
};

}  // namespace ladder::switches
