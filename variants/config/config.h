// variants/config/config.h: the configuration of one measured run.
//
// ModelConfig is GPT-2's shape (model_config.h); presets name the standard sizes. TrainConfig
// holds the optimiser and schedule (build-nanogpt's values). RunConfig adds
// the measurement settings the harness reads. Each field's CLI option, JSON
// key, bounds and help are declared once, in variants/config_fields.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "profiler/common/config_error.h"
#include "variants/config/base_rung.h"
#include "variants/config/model_config.h"
#include "variants/config/switch_flags.h"

namespace ladder {

struct Preset {
  std::string name;
  std::string description;
  ModelConfig model;
  int64_t batch;        // default micro-batch B
  int64_t seq;          // default sequence length T
  int64_t total_batch;  // tokens per optimizer step for grad-accum
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

// The ddp rung's knobs (torchtitan's practice: a generous timeout while the
// first step warms up NCCL, a shorter one from the second step on, so a dead
// or hung rank fails the others quickly).
struct DdpConfig {
  double bucket_cap_mb = 25;      // gradient bucket size, PyTorch DDP's default
  double first_timeout_s = 300;   // collectives up to the end of the first step
  double timeout_s = 100;         // collectives from the second step on
  double connect_timeout_s = 60;  // reaching the rendezvous at MASTER_ADDR:MASTER_PORT
};

// Where the step's tokens come from (variants/data/data_source.h). An empty path
// is the seeded synthetic stream.
struct DataConfig {
  std::string path;             // --data: a token shard, or a glob of shards
  std::string format = "auto";  // --data-format: "auto" (llm.c header) or "raw-u16" (nanoGPT)
  bool prefetch = true;         // produce the next batch on a background thread
};

// vocab-pad's vocabulary: V rounded up to a multiple of 128 (50257 -> 50304).
inline int64_t padded_vocab(int64_t v) { return (v + 127) / 128 * 128; }

struct RunConfig {
  std::string preset = "cpu-default";
  ModelConfig model;
  TrainConfig train;
  int64_t batch = 4;
  int64_t seq = 256;
  int64_t steps = 10;   // measured steps
  int64_t warmup = 2;   // excluded from the figures: at least this many
  // Warm up until stable: after `warmup` steps, go on while the last
  // kWarmupWindow steps' dt differ by more than warmup_tolerance_pct, up to
  // warmup_max steps. warmup_max == warmup is a fixed warmup (what --warmup N
  // asks for, and what the ddp rung always does: its ranks must agree).
  int64_t warmup_max = 20;
  // Stable: the last kWarmupWindow steps' dt within this share of their minimum.
  double warmup_tolerance_pct = 5.0;
  uint64_t seed = 1337;
  std::string device = "cpu";  // "cpu", "cuda" or "cuda:N"
  int threads = 0;             // intra-op threads; 0 means all cores
  bool breakdown = false;      // synchronise at phase boundaries
  bool fixed_batch = false;    // every step sees batch 0 (overfitting checks)
  std::optional<double> peak_tflops;  // overrides the datasheet table
  std::string rung = kBaseRungName;
  Switches sw;              // what the rung changes; all off is the fp32 baseline
  int64_t total_batch = 0;  // grad-accum: tokens per optimizer step (all ranks)
  int world_size = 1;
  DdpConfig ddp;
  // This process's place in the job, from the launcher's environment at run
  // time (bench/measure/device/launch_env.h); not part of a cell's saved config.
  int rank = 0, local_rank = 0, local_world_size = 1;
  DataConfig data;
  // Profiling (profiler/): a trace schedule "wait,warmup,active[,repeat]"
  // ("" = no traces), and per-layer ranges in forward and backward.
  std::string profile;
  bool layer_ranges = false;
  // bf16 on a CPU (--cpu-bf16): "on" runs the bf16 switch as asked; "off"
  // leaves its autocast off (matmuls in fp32); "auto" leaves it off where the
  // run measured bf16 matmuls slower than fp32's (bench/measure/roofline/roofline.h: bf16_slower).
  std::string cpu_bf16 = "auto";
  // --gemm-plan: how fused-linear's epilogue GEMMs run on CUDA (variants/planners/gemm_plan.h):
  // "auto" (measured in warm-up), "pytorch", "lt", or a plan file.
  std::string gemm_plan = "auto";
  // --attention-plan: the flash rung's SDPA backend (variants/planners/attention_plan.h):
  // "auto" (measured in warm-up) or one pinned: pytorch, flash, cudnn, efficient
  // (CUDA), math, explicit, flash-fp32 (CPU).
  std::string attention_plan = "auto";
  // --layer-norm-kernel: fused-ln's CUDA kernels (variants/ops/add_layer_norm/add_layer_norm.h):
  // "auto" (the vector kernels where they fit) or "row".
  std::string layer_norm_kernel = "auto";
  // --cross-entropy-kernel: fused-ce's CUDA kernel (variants/ops/cross_entropy/cross_entropy.h):
  // "batched" (a batch of logits at a time) or "online" (one at a time).
  std::string cross_entropy_kernel = "batched";
  // Set by the harness when "auto" found bf16 matmuls slower than fp32's: the
  // measured rates, for the switch's reason. Runtime only, not saved.
  std::string cpu_bf16_slower;
  // Whether the bf16 switch's autocast is applied: on CUDA always, on a CPU
  // as cpu_bf16 (and the measurement) say.
  bool bf16_applied() const;
  // Why the bf16 switch's autocast is left off ("" when it is applied, or
  // the rung has no bf16): for the rung's and a peer's switches.bf16.reason.
  std::string bf16_off_reason() const;

  int64_t total_steps() const { return warmup + steps; }  // with the minimum warmup
  // Not for the ddp rung (ranks must run the same steps) nor with --profile
  // (its schedule names absolute steps).
  bool warmup_until_stable() const { return warmup_max > warmup && world_size == 1 && profile.empty(); }
  int64_t tokens_per_micro_step() const { return batch * seq; }
  // micro_steps = total_batch / (B * T * world) with grad-accum, else 1.
  int64_t micro_steps() const {
    return sw.on(switches::grad_accum) ? total_batch / (batch * seq * world_size) : 1;
  }
  int64_t tokens_per_step() const { return tokens_per_micro_step() * micro_steps(); }
  // The model's vocabulary: padded to a multiple of 128 with vocab-pad.
  int64_t model_vocab() const {
    return sw.on(switches::vocab_pad) ? padded_vocab(model.vocab_size) : model.vocab_size;
  }
};

// The JSON form: the fields of variants/config_fields.h at their paths, plus
// preset, rung, switches, world_size, device and the derived micro_steps and
// model_vocab.
void to_json(nlohmann::json& j, const ModelConfig& m);
void to_json(nlohmann::json& j, const RunConfig& r);
void from_json(const nlohmann::json& j, RunConfig& r);

}  // namespace ladder
