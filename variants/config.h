// variants/config.h: the configuration of one measured run.
//
// ModelConfig is GPT-2's shape; presets name the standard sizes. TrainConfig
// holds the optimiser and schedule (build-nanogpt's values). RunConfig adds
// the measurement settings the harness reads. Every field can be overridden
// from the CLI, and validate() names the field, the value and what is allowed.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ladder {

// Bad user input: the CLI turns it into exit code 2.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ModelConfig {
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_embd = 768;
  int64_t block_size = 1024;  // maximum sequence length (wpe rows)
  int64_t vocab_size = 50257;
};

struct Preset {
  std::string name;
  std::string description;
  ModelConfig model;
  int64_t batch;  // default micro-batch B
  int64_t seq;    // default sequence length T
};

const std::vector<Preset>& presets();
// Throws ConfigError listing the known names.
const Preset& find_preset(const std::string& name);

struct TrainConfig {
  double max_lr = 6e-4;
  double min_lr_ratio = 0.1;  // cosine decays to max_lr * min_lr_ratio
  int64_t lr_warmup_steps = 10;
  // Cosine horizon; 0 means "the run's total steps (warmup + measured)".
  int64_t lr_decay_steps = 0;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;  // only on tensors with dim >= 2
  double grad_clip = 1.0;
};

struct RunConfig {
  std::string preset = "cpu-default";
  ModelConfig model;
  TrainConfig train;
  int64_t batch = 4;
  int64_t seq = 256;
  int64_t steps = 10;   // measured steps
  int64_t warmup = 2;   // excluded from the figures
  uint64_t seed = 1337;
  std::string device = "cpu";  // "cpu", "cuda" or "cuda:N"
  int threads = 0;             // intra-op threads; 0 means all cores
  bool breakdown = false;      // synchronise at phase boundaries
  bool fixed_batch = false;    // every step sees batch 0 (overfitting checks)
  std::optional<double> peak_tflops;  // overrides the datasheet table
  std::string rung = "fp32";

  int64_t total_steps() const { return warmup + steps; }
  int64_t tokens_per_step() const { return batch * seq; }
  // Throws ConfigError on the first invalid field.
  void validate() const;
};

void to_json(nlohmann::json& j, const ModelConfig& m);
void to_json(nlohmann::json& j, const TrainConfig& t);
void to_json(nlohmann::json& j, const RunConfig& r);

}  // namespace ladder
