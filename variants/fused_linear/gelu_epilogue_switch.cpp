// variants/fused_linear/gelu_epilogue_switch.cpp: GELU and its derivative in the MLP's
// cuBLASLt epilogues (GELU_AUX_BIAS forward, DGELU backward); off, they
// run as separate ATen kernels (gelu, gelu_backward).
#include "variants/switches/switch.h"

#include <fmt/format.h>

namespace ladder::switches {

extern const SwitchDecl gelu_epilogue = {
    "gelu-epilogue", 340, SwitchRole::kPart, &fused,
    "GELU and its derivative in the MLP GEMMs' cuBLASLt epilogues (GELU_AUX_BIAS, DGELU)",
    Numerics::kFp32Exact, {&fused_linear, &lt_epilogues}, /*cuda_only=*/true,
    [](const RunConfig&, StepPlan& p) { p.model.linear.gelu_epilogue = true; },
    [](const SwitchFacts& f) {
      const int64_t n = f.linear.gelu_epilogue_gemms;
      std::string reason = fmt::format("{} GEMMs ran with a GELU epilogue", n);
      const GemmPlan* plan = f.plan.model.linear.plan.get();
      const auto [lt, sites] = plan ? lt_sites(*plan, /*gelu_roles=*/true) : std::pair<int, int>{0, 0};
      if (plan) reason += fmt::format("; the GEMM plan ({}) runs {} of its {} GELU sites on cuBLASLt", plan->source,
                                      lt, sites);
      auto j = SwitchEffect::on(n > 0, "cuBLASLt GELU_AUX_BIAS and DGELU epilogues", reason);
      if (plan && lt == 0 && n == 0) j.applicable = false;  // measured: PyTorch's ops were as fast
      j.fusions = std::vector<std::string>{"cublaslt_epilogues: GELU_AUX_BIAS, DGELU"};
      return j;
    },
};

}  // namespace ladder::switches
