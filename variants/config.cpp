// variants/config.cpp: presets, validation and JSON form of the run config.
#include "variants/config.h"

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

namespace {
void require_positive(const char* option, int64_t value) {
  if (value <= 0)
    throw ConfigError(fmt::format("{}: got {}, expected an integer > 0", option, value));
}
}  // namespace

void RunConfig::validate() const {
  // Every real-valued field must be finite, whatever its source (CLI, a cell's config.json).
  for (const auto& [flag, v] : {std::pair<const char*, double>{"--lr", train.max_lr},
                                {"--min-lr-ratio", train.min_lr_ratio},
                                {"--weight-decay", train.weight_decay},
                                {"--grad-clip", train.grad_clip},
                                {"--bucket-cap-mb", ddp.bucket_cap_mb},
                                {"--ddp-first-timeout", ddp.first_timeout_s},
                                {"--ddp-timeout", ddp.timeout_s},
                                {"--dist-connect-timeout", ddp.connect_timeout_s},
                                {"--peak-tflops", peak_tflops.value_or(1.0)},
                                {"betas[0]", train.beta1},
                                {"betas[1]", train.beta2},
                                {"eps", train.eps}})
    if (!std::isfinite(v)) throw ConfigError(fmt::format("{}: got {}, expected a finite number", flag, v));
  require_positive("--batch", batch);
  require_positive("--seq", seq);
  require_positive("--steps", steps);
  if (warmup < 0)
    throw ConfigError(fmt::format("--warmup: got {}, expected an integer >= 0", warmup));
  if (warmup_max < warmup)
    throw ConfigError(fmt::format("--warmup-max: got {}, expected >= the minimum warmup {}", warmup_max, warmup));
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
  if (sw.grad_accum) {
    const int64_t per_micro = batch * seq * world_size;
    if (total_batch <= 0 || total_batch % per_micro != 0)
      throw ConfigError(fmt::format(
          "--total-batch: {} tokens is not divisible by B*T*world = {}*{}*{} = {}; expected a "
          "positive multiple of {}",
          total_batch, batch, seq, world_size, per_micro, per_micro));
  }
  if (world_size < 1)
    throw ConfigError(fmt::format("world_size: got {}, expected >= 1", world_size));
  if (world_size > 1 && !sw.ddp)
    throw ConfigError(fmt::format("world_size {}: rung '{}' has no ddp switch; only the ddp rung "
                                  "runs on several ranks",
                                  world_size, rung));
  auto positive = [](double v, const char* flag) {
    if (!(v > 0)) throw ConfigError(fmt::format("{}: got {}, expected a number > 0", flag, v));
  };
  positive(ddp.bucket_cap_mb, "--bucket-cap-mb");
  positive(ddp.first_timeout_s, "--ddp-first-timeout");
  positive(ddp.timeout_s, "--ddp-timeout");
  positive(ddp.connect_timeout_s, "--dist-connect-timeout");
  if (data.format != "auto" && data.format != "raw-u16")
    throw ConfigError(fmt::format("--data-format: '{}' is not a token-shard format; expected auto "
                                  "(llm.c header, detected) or raw-u16 (nanoGPT)",
                                  data.format));
  if (data.path.empty() && data.format != "auto")
    throw ConfigError(fmt::format("--data-format {}: needs --data PATH|GLOB (the synthetic stream "
                                  "has no format)",
                                  data.format));
  if (rank < 0 || rank >= world_size)
    throw ConfigError(fmt::format("rank {} of world size {}: expected 0 <= rank < world size",
                                  rank, world_size));
  if (peak_tflops && !(*peak_tflops > 0))
    throw ConfigError(fmt::format("--peak-tflops: got {}, expected a number > 0", *peak_tflops));
  if (cpu_bf16 != "auto" && cpu_bf16 != "on" && cpu_bf16 != "off")
    throw ConfigError(fmt::format("--cpu-bf16: got '{}', expected auto (bf16 autocast unless this CPU's bf16 "
                                  "matmuls measure as emulated), on or off",
                                  cpu_bf16));
  if (!profile.empty()) profiler::parse_schedule(profile, total_steps());
  if ((!profile.empty() || layer_ranges) && !profiler::compiled_in())
    throw ConfigError(fmt::format("{}: this build has the profiler compiled out (configured with "
                                  "-DLADDER_WITH_PROFILER=OFF); reconfigure with -DLADDER_WITH_PROFILER=ON",
                                  profile.empty() ? "--layer-ranges" : "--profile"));
}

bool RunConfig::bf16_applied() const {
  if (!sw.bf16) return false;
  if (device.rfind("cuda", 0) == 0) return true;
  return cpu_bf16 == "on" || (cpu_bf16 == "auto" && cpu_bf16_emulated.empty());
}

std::string RunConfig::bf16_off_reason() const {
  if (!sw.bf16 || bf16_applied()) return "";
  if (cpu_bf16 == "off") return "--cpu-bf16 off";
  return "--cpu-bf16 auto: this CPU's bf16 matmuls are emulated (" + cpu_bf16_emulated + "); --cpu-bf16 on forces bf16";
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

void to_json(nlohmann::json& j, const DdpConfig& d) {
  j = {{"bucket_cap_mb", d.bucket_cap_mb},
       {"first_timeout_s", d.first_timeout_s},
       {"timeout_s", d.timeout_s},
       {"connect_timeout_s", d.connect_timeout_s}};
}

void from_json(const nlohmann::json& j, DdpConfig& d) {
  j.at("bucket_cap_mb").get_to(d.bucket_cap_mb);
  j.at("first_timeout_s").get_to(d.first_timeout_s);
  j.at("timeout_s").get_to(d.timeout_s);
  j.at("connect_timeout_s").get_to(d.connect_timeout_s);
}

void to_json(nlohmann::json& j, const DataConfig& d) {
  j = {{"path", d.path.empty() ? nlohmann::json() : nlohmann::json(d.path)},
       {"format", d.format},
       {"prefetch", d.prefetch}};
}

void to_json(nlohmann::json& j, const RunConfig& r) {
  j = {{"preset", r.preset},
       {"model", r.model},
       {"train", r.train},
       {"rung", r.rung},
       {"switches", r.sw},
       {"total_batch", r.total_batch},
       {"micro_steps", r.micro_steps()},
       {"world_size", r.world_size},
       {"ddp", r.ddp},
       {"data", r.data},
       {"model_vocab", r.model_vocab()},
       {"batch", r.batch},
       {"seq", r.seq},
       {"steps", r.steps},
       {"warmup", r.warmup},
       {"warmup_max", r.warmup_max},
       {"seed", r.seed},
       {"device", r.device},
       {"threads", r.threads},
       {"breakdown", r.breakdown},
       {"fixed_batch", r.fixed_batch},
       {"profile", r.profile.empty() ? nlohmann::json() : nlohmann::json(r.profile)},
       {"layer_ranges", r.layer_ranges},
       {"cpu_bf16", r.cpu_bf16},
       {"peak_tflops_override", r.peak_tflops ? nlohmann::json(*r.peak_tflops) : nlohmann::json()}};
}

void from_json(const nlohmann::json& j, ModelConfig& m) {
  j.at("n_layer").get_to(m.n_layer);
  j.at("n_head").get_to(m.n_head);
  j.at("n_embd").get_to(m.n_embd);
  j.at("block_size").get_to(m.block_size);
  j.at("vocab_size").get_to(m.vocab_size);
}

void from_json(const nlohmann::json& j, TrainConfig& t) {
  j.at("max_lr").get_to(t.max_lr);
  j.at("min_lr_ratio").get_to(t.min_lr_ratio);
  j.at("lr_warmup_steps").get_to(t.lr_warmup_steps);
  j.at("lr_decay_steps").get_to(t.lr_decay_steps);
  t.beta1 = j.at("betas").at(0).get<double>();
  t.beta2 = j.at("betas").at(1).get<double>();
  j.at("eps").get_to(t.eps);
  j.at("weight_decay").get_to(t.weight_decay);
  j.at("grad_clip").get_to(t.grad_clip);
}

void from_json(const nlohmann::json& j, DataConfig& d) {
  const auto& path = j.at("path");
  d.path = path.is_null() ? std::string() : path.get<std::string>();
  j.at("format").get_to(d.format);
  j.at("prefetch").get_to(d.prefetch);
}

void from_json(const nlohmann::json& j, RunConfig& r) {
  j.at("preset").get_to(r.preset);
  j.at("model").get_to(r.model);
  j.at("train").get_to(r.train);
  j.at("rung").get_to(r.rung);
  j.at("switches").get_to(r.sw);
  j.at("total_batch").get_to(r.total_batch);
  j.at("world_size").get_to(r.world_size);
  j.at("ddp").get_to(r.ddp);
  if (j.contains("data")) j.at("data").get_to(r.data);  // configs from before --data: synthetic
  j.at("batch").get_to(r.batch);
  j.at("seq").get_to(r.seq);
  j.at("steps").get_to(r.steps);
  j.at("warmup").get_to(r.warmup);
  r.warmup_max = j.value("warmup_max", r.warmup);  // configs written before warm-up until stable: fixed
  j.at("seed").get_to(r.seed);
  j.at("device").get_to(r.device);
  j.at("threads").get_to(r.threads);
  j.at("breakdown").get_to(r.breakdown);
  j.at("fixed_batch").get_to(r.fixed_batch);
  // Absent from configs written before the profiler existed.
  const auto profile = j.value("profile", nlohmann::json());
  r.profile = profile.is_null() ? "" : profile.get<std::string>();
  r.layer_ranges = j.value("layer_ranges", false);
  r.cpu_bf16 = j.value("cpu_bf16", "on");  // configs from before --cpu-bf16 ran bf16 as asked
  const auto& peak = j.at("peak_tflops_override");
  r.peak_tflops = peak.is_null() ? std::nullopt : std::optional<double>(peak.get<double>());
}

}  // namespace ladder
