// variants/switches/grad_accum.cpp: micro-steps up to the total batch, the
// loss scaled by 1/micro_steps; it acts through RunConfig::micro_steps().
#include "variants/switches/switch.h"

#include <fmt/format.h>

#include "variants/config/config.h"

namespace ladder::switches {

extern const SwitchDecl grad_accum = {
    "grad-accum", 700, SwitchRole::kRung, nullptr,
    "gradient accumulation up to the total batch",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false, /*apply=*/nullptr,
    [](const SwitchFacts& f) {
      const auto& c = f.cfg;
      return SwitchEffect::on(c.micro_steps() > 1, "loss scaled by 1/micro_steps, one optimizer step",
                           fmt::format("{} micro-steps of {} tokens = {} tokens per optimizer step", c.micro_steps(),
                                       c.tokens_per_micro_step(), c.tokens_per_step()));
    },
    /*peers_base=*/false,
    /*parity_same_rows=*/true,  // against one step of all the micro-steps' rows
};

}  // namespace ladder::switches
