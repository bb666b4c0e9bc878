// variants/switches/grad_memset.cpp: the gradients zeroed in place after the
// optimizer (a memset each, their storage kept) instead of freed and made
// again by the next backward (set_to_none, the step's default without a flat
// buffer): what PyTorch's zero_grad(set_to_none=False) does. The flat buffer
// (flat-grads) and the ddp buckets already keep theirs.
#include "variants/switches/switch.h"

namespace ladder::switches {

extern const SwitchDecl grad_memset = {
    "grad-memset", 1200, SwitchRole::kExtra, nullptr,
    "the gradients zeroed in place after the optimizer, not freed (zero_grad set_to_none=False)",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false,
    [](const RunConfig& cfg, StepPlan& p) {
      if (p.acts(switches::flat_grads) || cfg.sw.on(switches::ddp))
        p.stand_down(switches::grad_memset, "the flat buffer or the ddp buckets keep the gradients already");
    },
    [](const SwitchFacts&) {
      return switch_effect(true, "optimizer zero_grad(set_to_none=false): one memset per gradient",
                           "each gradient's storage is kept across steps");
    },
};

}  // namespace ladder::switches
