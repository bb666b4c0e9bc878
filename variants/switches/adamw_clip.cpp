// variants/switches/adamw_clip.cpp: the clip's scaling applied inside the
// fused AdamW kernel (its grad_scale), not as a pass of its own over the
// gradients: the clip computes the norm and hands the divisor to the kernel.
#include "variants/switches/switch.h"

#include "variants/optim/optim.h"

namespace ladder::switches {

extern const SwitchDecl adamw_clip = {
    "adamw-clip", 380, SwitchRole::kPart, &fused,
    "the gradient clip's scaling inside the fused AdamW kernel, no pass of its own",
    Numerics::kFp32Exact, {&flat_grads, &fused_adamw}, /*cuda_only=*/false,
    // The step reads plan.acts(switches::adamw_clip); the divisor reaches the kernel
    // through the flat buffer, so where that stands down (the ddp rung keeps
    // its gradients in the all-reduce buckets) the clip cannot act either, and
    // the report says so (not applicable) rather than "not effective".
    [](const RunConfig&, StepPlan& p) {
      if (const auto why = p.stood_down.find("flat-grads"); why != p.stood_down.end())
        p.stand_down(switches::adamw_clip, "flat-grads stands down here (" + why->second + "): the clip scales the "
                                   "gradients itself");
    },
    [](const SwitchFacts& f) {
      const bool in_kernel = f.plan.acts(switches::flat_grads) && f.optimizer.divides_gradients_in_kernel();
      auto j = SwitchEffect::on(in_kernel, "_fused_adamw_'s grad_scale divides the gradients by the clip's divisor",
                             in_kernel ? "the clip computes the norm; the AdamW kernel applies its scale"
                                       : "the ddp rung has no flat buffer: the clip scales the gradients itself");
      j.fusions = std::vector<std::string>{"clip_inside_fused_adamw"};
      return j;
    },
};

}  // namespace ladder::switches
