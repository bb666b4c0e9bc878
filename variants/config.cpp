// variants/config.cpp: presets, validation and JSON form of the run config.
#include "variants/config.h"

#include "variants/config_fields.h"

#include <cmath>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profiler/range.h"
#include "profiler/schedule.h"

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

void RunConfig::validate() const {
  // Each field's own bounds, as declared (variants/config_fields.cpp); then
  // what depends on several fields.
  for (const auto& f : config_fields()) check_field(f, f.get(*this), field_label(f));
  if (warmup_max < warmup)
    throw ConfigError(fmt::format("--warmup-max: got {}, expected >= the minimum warmup {}", warmup_max, warmup));
  if (model.n_embd % model.n_head != 0)
    throw ConfigError(fmt::format("--n-embd: {} is not divisible by --n-head {}; expected a multiple "
                                  "of n_head so each head has n_embd/n_head channels",
                                  model.n_embd, model.n_head));
  if (seq > model.block_size)
    throw ConfigError(fmt::format("--seq: {} exceeds the block size {} of preset '{}'; expected "
                                  "<= {} (or raise --block-size)",
                                  seq, model.block_size, preset, model.block_size));
  if (sw.on("grad-accum")) {
    const int64_t per_micro = batch * seq * world_size;
    if (total_batch <= 0 || total_batch % per_micro != 0)
      throw ConfigError(fmt::format(
          "--total-batch: {} tokens is not divisible by B*T*world = {}*{}*{} = {}; expected a "
          "positive multiple of {}",
          total_batch, batch, seq, world_size, per_micro, per_micro));
  }
  if (world_size < 1)
    throw ConfigError(fmt::format("world_size: got {}, expected >= 1", world_size));
  if (world_size > 1 && !sw.on("ddp"))
    throw ConfigError(fmt::format("world_size {}: rung '{}' has no ddp switch; only the ddp rung "
                                  "runs on several ranks",
                                  world_size, rung));
  if (data.path.empty() && data.format != "auto")
    throw ConfigError(fmt::format("--data-format {}: needs --data PATH|GLOB (the synthetic stream "
                                  "has no format)",
                                  data.format));
  if (rank < 0 || rank >= world_size)
    throw ConfigError(fmt::format("rank {} of world size {}: expected 0 <= rank < world size",
                                  rank, world_size));
  if (!profile.empty()) profiler::parse_schedule(profile, total_steps());
  if ((!profile.empty() || layer_ranges) && !profiler::compiled_in())
    throw ConfigError(fmt::format("{}: this build has the profiler compiled out (configured with "
                                  "-DLADDER_WITH_PROFILER=OFF); reconfigure with -DLADDER_WITH_PROFILER=ON",
                                  profile.empty() ? "--layer-ranges" : "--profile"));
}

bool RunConfig::bf16_applied() const {
  if (!sw.on("bf16")) return false;
  if (device.rfind("cuda", 0) == 0) return true;
  return cpu_bf16 == "on" || (cpu_bf16 == "auto" && cpu_bf16_emulated.empty());
}

std::string RunConfig::bf16_off_reason() const {
  if (!sw.on("bf16") || bf16_applied()) return "";
  if (cpu_bf16 == "off") return "--cpu-bf16 off";
  return "--cpu-bf16 auto: this CPU's bf16 matmuls are emulated (" + cpu_bf16_emulated + "); --cpu-bf16 on forces bf16";
}

// The fields of the table (variants/config_fields.cpp) at their JSON paths;
// here only what the table leaves out: names, resolved values, derived figures.
void to_json(nlohmann::json& j, const ModelConfig& m) {
  RunConfig r;
  r.model = m;
  j = nlohmann::json(r).at("model");
}

void to_json(nlohmann::json& j, const RunConfig& r) {
  j = {{"preset", r.preset},
       {"rung", r.rung},
       {"switches", r.sw},
       {"micro_steps", r.micro_steps()},
       {"world_size", r.world_size},
       {"model_vocab", r.model_vocab()},
       {"device", r.device}};
  write_fields(r, j);
}

void from_json(const nlohmann::json& j, RunConfig& r) {
  j.at("preset").get_to(r.preset);
  j.at("rung").get_to(r.rung);
  j.at("switches").get_to(r.sw);
  j.at("world_size").get_to(r.world_size);
  j.at("device").get_to(r.device);
  read_fields(j, r);
}

}  // namespace ladder
