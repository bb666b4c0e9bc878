// variants/ops/cross_entropy/fused_ce_switch.cpp: the lm_head and the loss as one autograd
// node (fused::classifier_cross_entropy, llm.c's fused classifier): the
// logits' gradient is written over them in the loss's own pass.
#include "variants/switches/switch.h"

#include <fmt/format.h>

namespace ladder::switches {

extern const SwitchDecl fused_ce = {
    "fused-ce", 350, SwitchRole::kPart, &fused,
    "lm_head and cross-entropy in one node, the logits' gradient made in the loss's pass",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false,
    [](const RunConfig&, StepPlan& p) { p.model.fused_ce = true; },
    [](const SwitchFacts& f) {
      const int64_t calls = f.linear.classifier_calls;
      auto j = SwitchEffect::on(calls > 0, "ladder::classifier_cross_entropy",
                             fmt::format("ladder::classifier_cross_entropy ran {} times (a graph replay calls none)",
                                         calls));
      j.fusions = std::vector<std::string>{"classifier_loss_and_grad_in_one_pass"};
      // On CUDA, which kernel ran (--cross-entropy-kernel): batched or online.
      if (f.device.is_cuda() && calls > 0) {
        j.kernel = f.cfg.cross_entropy_kernel;
        j.reason = fmt::format("{}; CUDA kernel: {}", j.reason, f.cfg.cross_entropy_kernel);
      }
      return j;
    },
};

}  // namespace ladder::switches
