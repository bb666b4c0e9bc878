// variants/ops/attention/flash_switch.cpp: attention as scaled_dot_product_attention
// with is_causal; its backend (flash, efficient, cuDNN, math) as the step's
// attention plan chose (variants/planners/attention_plan.h), which on a CPU may also
// choose SDPA on fp32 copies of bf16 inputs, or the explicit attention.
#include "variants/switches/switch.h"

#include <fmt/format.h>

#include "variants/planners/attention_plan.h"
#include "variants/model/model.h"

namespace ladder::switches {

extern const SwitchDecl flash = {
    "flash", 400, SwitchRole::kRung, nullptr,
    "scaled_dot_product_attention with is_causal",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false,
    [](const RunConfig&, StepPlan& p) { p.model.flash = true; },
    [](const SwitchFacts& f) {
      const AttentionPlan* plan = f.attention;
      const AttentionBackend choice = plan ? plan->backend() : AttentionBackend::kPytorch;
      if (choice == AttentionBackend::kExplicit) {
        auto j = SwitchEffect::on(false, "the explicit attention",
                               fmt::format("the attention plan chose the explicit attention: {}", plan->reason));
        j.sdpa_backend = "none";
        j.applicable = false;  // measured: the explicit attention was faster here (as gelu-epilogue's)
        return j;
      }
      const std::string backend = sdpa_backend(f.cfg, f.device);
      // math is a fallback unless the plan measured it fastest
      const bool chosen = choice != AttentionBackend::kPytorch && choice != AttentionBackend::kFlash;
      std::string why = backend == "math" && !chosen ? "SDPA fell back to the math backend"
                                                     : fmt::format("SDPA backend: {}", backend);
      if (choice == AttentionBackend::kFlashFp32) why += " on fp32 copies of q, k, v";
      if (chosen) why += fmt::format(" (the attention plan's choice: {})", plan->reason);
      auto j = SwitchEffect::on(backend != "math" || chosen, "scaled_dot_product_attention(is_causal=true)", why);
      j.sdpa_backend = backend;
      return j;
    },
};

}  // namespace ladder::switches
