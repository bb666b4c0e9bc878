// variants/fused_linear/lt_epilogues_switch.cpp: the fused linears' bias work in the
// GEMM's cuBLASLt epilogue (BIAS forward; BGRADB: dW and db in one GEMM).
#include "variants/switches/switch.h"

#include <fmt/format.h>

namespace ladder::switches {

extern const SwitchDecl lt_epilogues = {
    "lt-epilogues", 330, SwitchRole::kPart, &fused,
    "cuBLASLt epilogues for the fused linears' bias and bias gradient (BIAS, BGRADB)",
    Numerics::kFp32Exact, {&fused_linear}, /*cuda_only=*/true,
    [](const RunConfig&, StepPlan& p) { p.model.linear.lt_epilogues = true; },
    [](const SwitchFacts& f) {
      const auto& s = f.linear;
      const int64_t plain = s.epilogue_gemms - s.gelu_epilogue_gemms;
      std::string reason = fmt::format("{} GEMMs ran on cuBLASLt, {} of them without GELU; {} fell back to "
                                       "separate ATen ops",
                                       s.epilogue_gemms, plain, s.fallback_gemms);
      if (s.fallback_gemms > 0) reason += fmt::format(" (last: {})", s.last_fallback);
      const GemmPlan* plan = f.plan.model.linear.plan.get();
      const auto [lt, sites] = plan ? lt_sites(*plan, /*gelu_roles=*/false) : std::pair<int, int>{0, 0};
      if (plan) reason += fmt::format("; the GEMM plan ({}) runs {} of its {} bias sites on cuBLASLt", plan->source,
                                      lt, sites);
      auto j = SwitchEffect::on(plain > 0, "cuBLASLt BIAS and BGRADB epilogues", reason);
      // Measured and kept PyTorch's ops everywhere: the part did its job (none was faster), not a failure.
      if (plan && lt == 0 && plain == 0) j.applicable = false;
      j.fusions = std::vector<std::string>{"cublaslt_epilogues: bias, BGRADB"};
      return j;
    },
};

}  // namespace ladder::switches
