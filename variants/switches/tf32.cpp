// variants/switches/tf32.cpp: fp32 matmuls with reduced-precision inputs.
#include "variants/switches/switch.h"

namespace ladder::switches {

extern const SwitchDecl tf32 = {
    "tf32", 100, SwitchRole::kRung, nullptr,
    "reduced-precision fp32 matmuls (TF32; oneDNN on CPU)",
    Numerics::kTf32, {}, /*cuda_only=*/false,
    /*apply=*/nullptr,  // the step reads plan.acts(switches::tf32)
    // What the device accepted: enable_tf32 probes it (variants/config/precision.h).
    // A CPU without the instructions has no such mode: on, but not
    // applicable there (on CUDA, where every GPU ladder targets has TF32, a
    // probe that finds none stays a failure).
    [](const SwitchFacts& f) {
      auto j = SwitchEffect::on(f.tf32.effective, f.tf32.mechanism, f.tf32.reason);
      if (!f.tf32.effective && !f.device.is_cuda()) j.applicable = false;
      return j;
    },
};

}  // namespace ladder::switches
