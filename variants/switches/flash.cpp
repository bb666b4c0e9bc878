// variants/switches/flash.cpp: attention as scaled_dot_product_attention
// with is_causal; LibTorch picks the backend (flash, efficient, cuDNN, math).
#include "variants/switches/switch.h"

#include <fmt/format.h>

#include "variants/model.h"

namespace ladder::switches {

extern const SwitchDecl flash = {
    "flash", 400, SwitchRole::kRung, nullptr,
    "scaled_dot_product_attention with is_causal",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false,
    [](const RunConfig&, StepPlan& p) { p.model.flash = true; },
    [](const SwitchFacts& f) {
      const std::string backend = sdpa_backend(f.cfg, f.device);
      auto j = switch_effect(backend != "math", "scaled_dot_product_attention(is_causal=true)",
                             backend == "math" ? "SDPA fell back to the math backend"
                                               : fmt::format("SDPA backend: {}", backend));
      j["sdpa_backend"] = backend;
      return j;
    },
};

}  // namespace ladder::switches
