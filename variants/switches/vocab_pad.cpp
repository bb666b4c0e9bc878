// variants/switches/vocab_pad.cpp: the vocabulary padded to a multiple of 128
// (50257 -> 50304); the padding logits never enter the softmax. It acts
// through RunConfig::model_vocab().
#include "variants/switches/switch.h"

#include <fmt/format.h>

#include "variants/config/config.h"

namespace ladder::switches {

extern const SwitchDecl vocab_pad = {
    "vocab-pad", 500, SwitchRole::kRung, nullptr,
    "vocabulary padded to a multiple of 128 (50257 -> 50304)",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false, /*apply=*/nullptr,
    [](const SwitchFacts& f) {
      const int64_t V = f.cfg.model.vocab_size, Vp = f.cfg.model_vocab();
      return SwitchEffect::on(Vp != V, "wte rows padded; padding logits excluded from the softmax",
                           Vp != V ? fmt::format("V {} -> {}", V, Vp)
                                   : fmt::format("V {} is already a multiple of 128", V));
    },
};

}  // namespace ladder::switches
