// variants/config/precision_name.h: the three precisions a step's matmuls run in,
// and their one spelling ("fp32", "tf32", "bf16") in reports, plans,
// rooflines and tables. Light: no LibTorch, so the report readers and
// renderers include it too.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ladder {

enum class Precision { kFP32, kTF32, kBF16 };

const char* precision_name(Precision p);                          // "fp32", "tf32", "bf16"
std::optional<Precision> parse_precision(std::string_view name);  // none for any other text
// Every spelling, fp32 first, as a schema's enum takes them (fields::Doc::one_of).
const std::vector<nlohmann::json>& precision_names();

// What a step's matmuls ran in from its switches' effects: bf16 where
// autocast took effect, else tf32 where a reduced fp32 mode took effect
// (TF32 on CUDA; oneDNN's tf32 or bf16 math on a CPU), else fp32.
Precision matmul_precision(bool bf16_took_effect, bool tf32_took_effect);

}  // namespace ladder
