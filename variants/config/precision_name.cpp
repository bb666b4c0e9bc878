// variants/config/precision_name.cpp: see precision_name.h.
#include "variants/config/precision_name.h"

#include <nlohmann/json.hpp>

namespace ladder {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFP32: return "fp32";
    case Precision::kTF32: return "tf32";
    case Precision::kBF16: return "bf16";
  }
  return "?";
}

const std::vector<nlohmann::json>& precision_names() {
  static const std::vector<nlohmann::json> kNames = {precision_name(Precision::kFP32), precision_name(Precision::kTF32),
                                                  precision_name(Precision::kBF16)};
  return kNames;
}

std::optional<Precision> parse_precision(std::string_view name) {
  for (const Precision p : {Precision::kFP32, Precision::kTF32, Precision::kBF16})
    if (name == precision_name(p)) return p;
  return std::nullopt;
}

Precision matmul_precision(bool bf16_took_effect, bool tf32_took_effect) {
  return bf16_took_effect ? Precision::kBF16 : tf32_took_effect ? Precision::kTF32 : Precision::kFP32;
}

}  // namespace ladder
