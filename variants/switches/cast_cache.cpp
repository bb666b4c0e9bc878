// variants/switches/cast_cache.cpp: the fused ops' bf16 copies of the weights
// and biases made once per optimizer step, right after the update, instead
// of in every micro-step's forward (variants/ops/cast_cache.h).
#include "variants/switches/switch.h"

#include <fmt/format.h>

#include "variants/ops/cast_cache.h"

namespace ladder::switches {

extern const SwitchDecl cast_cache = {
    "cast-cache", 355, SwitchRole::kPart, &fused,
    "the fused ops' bf16 weight copies made once per optimizer step, not in every micro-step",
    Numerics::kFp32Exact, {&bf16}, /*cuda_only=*/false,
    // The step builds the cache (TrainStep) when this acts; only the fused
    // ops read it, and only bf16 gives them anything to cast.
    [](const RunConfig&, StepPlan& p) {
      if (const auto why = p.stood_down.find("bf16"); why != p.stood_down.end())
        p.stand_down(switches::cast_cache, "bf16 stands down here (" + why->second + "): nothing is cast");
      else if (!p.model.fused_linear && !p.model.fused_ce)
        p.stand_down(switches::cast_cache, "fused-linear and fused-ce are off: no fused op casts a weight");
    },
    [](const SwitchFacts& f) {
      if (!f.casts) return SwitchEffect::on(false, "none", "bf16 took no effect on this device: nothing is cast");
      const auto s = f.casts->stats();
      auto j = SwitchEffect::on(
          s.reads > 0, "CastCache: one _foreach_copy_ into persistent bf16 copies after each optimizer update",
          fmt::format("{} parameters ({:.1f} MB of copies): {} refreshes, {} reads by the fused ops, {} cast afresh "
                      "(changed since a refresh); a CUDA graph's replay reads without counting",
                      s.parameters, s.bytes / 1e6, s.refreshes, s.reads, s.stale));
      j.fusions = std::vector<std::string>{"weight_casts_once_per_step"};
      j.cast_cache = CastCacheFacts{s.parameters, s.bytes, s.refreshes, s.reads, s.stale};
      return j;
    },
};

}  // namespace ladder::switches
