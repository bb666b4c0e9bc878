// variants/switches/bf16.cpp: bf16 autocast around forward and loss.
#include "variants/switches/switch.h"

#include "variants/config/config.h"

namespace ladder::switches {

extern const SwitchDecl bf16 = {
    "bf16", 200, SwitchRole::kRung, nullptr,
    "bf16 autocast around forward and loss",
    Numerics::kBf16, {}, /*cuda_only=*/false,
    // On a CPU --cpu-bf16 may leave autocast off (RunConfig::bf16_applied):
    // on, but standing down here (the report: not applicable, and why).
    [](const RunConfig& c, StepPlan& p) {
      if (!c.bf16_applied()) p.stand_down(switches::bf16, c.bf16_off_reason() + ": autocast left off, the matmuls run in fp32");
    },
    [](const SwitchFacts& f) { return SwitchEffect::on(f.bf16.effective, f.bf16.mechanism, f.bf16.reason); },
};

}  // namespace ladder::switches
