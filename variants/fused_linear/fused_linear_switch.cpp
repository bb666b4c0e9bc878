// variants/fused_linear/fused_linear_switch.cpp: the block's linears as ladder ops, one
// autograd node each (c_attn, c_proj: fused::linear_bias; the MLP:
// fused::mlp_gelu). Their cuBLASLt epilogues are switches of their own.
#include "variants/switches/switch.h"

#include <fmt/format.h>

namespace ladder::switches {

extern const SwitchDecl fused_linear = {
    "fused-linear", 320, SwitchRole::kPart, &fused,
    "attention linears and the MLP as ladder ops, one autograd node each",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false,
    [](const RunConfig&, StepPlan& p) { p.model.fused_linear = true; },
    [](const SwitchFacts& f) {
      const int64_t mlp = f.linear.mlp_gelu_calls, lb = f.linear.linear_bias_calls;
      auto j = SwitchEffect::on(mlp > 0 && lb > 0, "ladder::linear_bias, ladder::mlp_gelu",
                             fmt::format("ladder::mlp_gelu ran {} times, ladder::linear_bias {} (a graph replay "
                                         "calls none)",
                                         mlp, lb));
      j.fusions = std::vector<std::string>{"mlp_one_autograd_node"};
      return j;
    },
};

}  // namespace ladder::switches
