// variants/config/config.cpp: presets and the bf16 decision of the run config. Its
// validation and JSON form are built from the field table, in
// variants/config_fields.cpp.
#include "variants/config/config.h"

#include <cmath>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>


namespace ladder {

const std::vector<Preset>& presets() {
  // GPT-2 sizes from the GPT-2 paper / nanoGPT's from_pretrained table.
  static const std::vector<Preset> kPresets = {
      {"gpt2-124m", "GPT-2 small (L12 H12 C768)", {12, 12, 768, 1024, 50257}, 16, 1024, 524288},
      {"gpt2-350m", "GPT-2 medium (L24 H16 C1024)", {24, 16, 1024, 1024, 50257}, 8, 1024, 524288},
      {"gpt2-774m", "GPT-2 large (L36 H20 C1280)", {36, 20, 1280, 1024, 50257}, 4, 1024, 524288},
      {"gpt2-1558m", "GPT-2 XL (L48 H25 C1600)", {48, 25, 1600, 1024, 50257}, 2, 1024, 524288},
      // Sized so the whole CPU ladder finishes in minutes on 2 cores; the
      // accumulation rung does 4 micro-steps.
      {"cpu-default", "CPU default (L4 H4 C256, V50257)", {4, 4, 256, 256, 50257}, 4, 256, 4096},
      // Sized so a test step takes a few milliseconds. V = 1000 so that
      // vocab-pad has something to pad (to 1024).
      {"tiny", "test preset (L2 H2 C64, V1000)", {2, 2, 64, 64, 1000}, 4, 64, 1024},
  };
  return kPresets;
}

const Preset& find_preset(const std::string& name) {
  std::string known;
  for (const auto& p : presets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw ConfigError(fmt::format("--preset: unknown preset '{}'; expected one of: {}", name, known));
}

bool RunConfig::bf16_applied() const {
  if (!sw.on(switches::bf16)) return false;
  if (device.rfind("cuda", 0) == 0) return true;
  return cpu_bf16 == "on" || (cpu_bf16 == "auto" && cpu_bf16_slower.empty());
}

std::string RunConfig::bf16_off_reason() const {
  if (!sw.on(switches::bf16) || bf16_applied()) return "";
  if (cpu_bf16 == "off") return "--cpu-bf16 off";
  return "--cpu-bf16 auto: this CPU's bf16 matmuls are slower than its fp32 ones (" + cpu_bf16_slower +
         "); --cpu-bf16 on forces bf16";
}

// The fields of the table (variants/config_fields.cpp) at their JSON paths;
// here only what the table leaves out: names, resolved values, derived figures.
void to_json(nlohmann::json& j, const ModelConfig& m) {
  RunConfig r;
  r.model = m;
  j = nlohmann::json(r).at("model");
}

}  // namespace ladder
