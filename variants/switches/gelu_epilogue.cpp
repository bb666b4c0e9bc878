// variants/switches/gelu_epilogue.cpp: GELU and its derivative in the MLP's
// cuBLASLt epilogues (GELU_AUX_BIAS forward, DGELU_BGRAD backward); off, they
// run as separate ATen kernels (gelu, gelu_backward, sum).
#include "variants/switches/switch.h"

#include <fmt/format.h>

namespace ladder::switches {

extern const SwitchDecl kGeluEpilogue = {
    "gelu-epilogue", &Switches::gelu_epilogue, "fused",
    "GELU and its derivative in the MLP GEMMs' cuBLASLt epilogues (GELU_AUX_BIAS, DGELU_BGRAD)",
    Numerics::kFp32Exact, {"fused-linear", "lt-epilogues"}, /*cuda_only=*/true,
    [](const RunConfig&, StepPlan& p) { p.model.linear.gelu_epilogue = true; },
    [](const SwitchFacts& f) {
      const auto& lin = f.plan.model.linear;
      const bool possible = f.plan.model.fused_linear && lin.lt_epilogues;
      const int64_t n = f.linear.gelu_epilogue_gemms;
      auto j = switch_effect(possible && n > 0, "cuBLASLt GELU_AUX_BIAS and DGELU_BGRAD epilogues",
                             possible ? fmt::format("{} GEMMs ran with a GELU epilogue", n)
                                      : "needs fused-linear and lt-epilogues");
      j["fusions"] = {"cublaslt_epilogues: GELU_AUX_BIAS, DGELU_BGRAD"};
      return j;
    },
};

}  // namespace ladder::switches
