// variants/ops/add_layer_norm/fused_ln_switch.cpp: each residual add and the LayerNorm after it
// as one op (fused::add_layer_norm; under bf16 autocast it writes bf16).
#include "variants/switches/switch.h"

#include <fmt/format.h>

namespace ladder::switches {

extern const SwitchDecl fused_ln = {
    "fused-ln", 310, SwitchRole::kPart, &fused,
    "residual add + LayerNorm in one op (one pass, bf16 out under autocast)",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false,
    [](const RunConfig&, StepPlan& p) { p.model.fused_ln = true; },
    [](const SwitchFacts& f) {
      const int64_t calls = f.add_layer_norm_calls;
      auto j = SwitchEffect::on(calls > 0, "ladder::add_layer_norm",
                             fmt::format("ladder::add_layer_norm ran {} times (a graph replay calls none)", calls));
      j.fusions = std::vector<std::string>{"residual_add_layer_norm"};
      // Under bf16 autocast the LayerNorms hand bf16 to the next matmul: no
      // cast kernels between them, forward or backward (model.cpp).
      if (f.plan.acts(switches::bf16)) j.fusions->push_back("layer_norm_outputs_in_bf16");
      // On CUDA, which kernels ran (--layer-norm-kernel): the vector kernels
      // where the width and alignment allow, else the row kernels.
      if (f.device.is_cuda()) {
        const auto& n = f.layer_norm_launches;
        j.kernels = LayerNormKernels{f.cfg.layer_norm_kernel,
                                     {n.forward_vector, n.forward_row},
                                     {n.backward_vector, n.backward_row}};
        j.reason = fmt::format("{}; CUDA kernels ({}): forward {} vector, {} row; backward {} vector, {} row",
                                  j.reason, f.cfg.layer_norm_kernel, n.forward_vector,
                                  n.forward_row, n.backward_vector, n.backward_row);
      }
      return j;
    },
};

}  // namespace ladder::switches
