// variants/switches/tf32.cpp: fp32 matmuls with reduced-precision inputs.
#include "variants/switches/switch.h"

namespace ladder::switches {

extern const SwitchDecl kTf32 = {
    "tf32", &Switches::tf32, nullptr,
    "reduced-precision fp32 matmuls (TF32; oneDNN on CPU)",
    Numerics::kTf32, {}, /*cuda_only=*/false,
    [](const RunConfig&, StepPlan& p) { p.tf32 = true; },
    // What the device accepted: enable_tf32 probes it (variants/precision.h).
    [](const SwitchFacts& f) { return switch_effect(f.tf32.effective, f.tf32.mechanism, f.tf32.reason); },
};

}  // namespace ladder::switches
