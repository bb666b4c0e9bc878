// variants/config.cpp: presets, validation and JSON form of the run config.
#include "variants/config.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ladder {

const std::vector<Preset>& presets() {
  // GPT-2 sizes from the GPT-2 paper / nanoGPT's from_pretrained table.
  static const std::vector<Preset> kPresets = {
      {"gpt2-124m", "GPT-2 small (L12 H12 C768)", {12, 12, 768, 1024, 50257}, 16, 1024},
      {"gpt2-350m", "GPT-2 medium (L24 H16 C1024)", {24, 16, 1024, 1024, 50257}, 8, 1024},
      {"gpt2-774m", "GPT-2 large (L36 H20 C1280)", {36, 20, 1280, 1024, 50257}, 4, 1024},
      {"gpt2-1558m", "GPT-2 XL (L48 H25 C1600)", {48, 25, 1600, 1024, 50257}, 2, 1024},
      // Sized so the whole CPU ladder finishes in minutes on 2 cores.
      {"cpu-default", "CPU default (L4 H4 C256, V50257)", {4, 4, 256, 256, 50257}, 4, 256},
      // Sized so a test step takes a few milliseconds.
      {"tiny", "test preset (L2 H2 C64, V1024)", {2, 2, 64, 64, 1024}, 4, 64},
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

namespace {
void require_positive(const char* option, int64_t value) {
  if (value <= 0)
    throw ConfigError(fmt::format("{}: got {}, expected an integer > 0", option, value));
}
}  // namespace

void RunConfig::validate() const {
  require_positive("--batch", batch);
  require_positive("--seq", seq);
  require_positive("--steps", steps);
  if (warmup < 0)
    throw ConfigError(fmt::format("--warmup: got {}, expected an integer >= 0", warmup));
  require_positive("--n-layer", model.n_layer);
  require_positive("--n-head", model.n_head);
  require_positive("--n-embd", model.n_embd);
  require_positive("--block-size", model.block_size);
  require_positive("--vocab", model.vocab_size);
  if (model.n_embd % model.n_head != 0)
    throw ConfigError(fmt::format("--n-embd: {} is not divisible by --n-head {}; expected a multiple "
                                  "of n_head so each head has n_embd/n_head channels",
                                  model.n_embd, model.n_head));
  if (seq > model.block_size)
    throw ConfigError(fmt::format("--seq: {} exceeds the block size {} of preset '{}'; expected "
                                  "<= {} (or raise --block-size)",
                                  seq, model.block_size, preset, model.block_size));
  if (threads < 0)
    throw ConfigError(fmt::format("--threads: got {}, expected >= 0 (0 = all cores)", threads));
  if (!(train.max_lr > 0))
    throw ConfigError(fmt::format("--lr: got {}, expected a number > 0", train.max_lr));
  if (train.min_lr_ratio < 0 || train.min_lr_ratio > 1)
    throw ConfigError(fmt::format("--min-lr-ratio: got {}, expected 0..1", train.min_lr_ratio));
  if (train.lr_warmup_steps < 0)
    throw ConfigError(fmt::format("--lr-warmup: got {}, expected >= 0", train.lr_warmup_steps));
  if (train.weight_decay < 0)
    throw ConfigError(fmt::format("--weight-decay: got {}, expected >= 0", train.weight_decay));
  if (!(train.grad_clip > 0))
    throw ConfigError(fmt::format("--grad-clip: got {}, expected a number > 0", train.grad_clip));
  if (peak_tflops && !(*peak_tflops > 0))
    throw ConfigError(fmt::format("--peak-tflops: got {}, expected a number > 0", *peak_tflops));
}

void to_json(nlohmann::json& j, const ModelConfig& m) {
  j = {{"n_layer", m.n_layer},
       {"n_head", m.n_head},
       {"n_embd", m.n_embd},
       {"block_size", m.block_size},
       {"vocab_size", m.vocab_size}};
}

void to_json(nlohmann::json& j, const TrainConfig& t) {
  j = {{"max_lr", t.max_lr},
       {"min_lr_ratio", t.min_lr_ratio},
       {"lr_warmup_steps", t.lr_warmup_steps},
       {"lr_decay_steps", t.lr_decay_steps},
       {"betas", {t.beta1, t.beta2}},
       {"eps", t.eps},
       {"weight_decay", t.weight_decay},
       {"grad_clip", t.grad_clip}};
}

void to_json(nlohmann::json& j, const RunConfig& r) {
  j = {{"preset", r.preset},
       {"model", r.model},
       {"train", r.train},
       {"rung", r.rung},
       {"batch", r.batch},
       {"seq", r.seq},
       {"steps", r.steps},
       {"warmup", r.warmup},
       {"seed", r.seed},
       {"device", r.device},
       {"threads", r.threads},
       {"breakdown", r.breakdown},
       {"fixed_batch", r.fixed_batch},
       {"peak_tflops_override", r.peak_tflops ? nlohmann::json(*r.peak_tflops) : nlohmann::json()}};
}

}  // namespace ladder
