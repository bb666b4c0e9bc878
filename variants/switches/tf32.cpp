// variants/switches/tf32.cpp: fp32 matmuls with reduced-precision inputs.
#include "variants/switches/switch.h"

namespace ladder::switches {

extern const SwitchDecl tf32 = {
    "tf32", 100, SwitchRole::kRung, nullptr,
    "reduced-precision fp32 matmuls (TF32; oneDNN on CPU)",
    Numerics::kTf32, {}, /*cuda_only=*/false,
    /*apply=*/nullptr,  // the step reads plan.acts("tf32")
    // What the device accepted: enable_tf32 probes it (variants/precision.h).
    [](const SwitchFacts& f) { return switch_effect(f.tf32.effective, f.tf32.mechanism, f.tf32.reason); },
};

}  // namespace ladder::switches
