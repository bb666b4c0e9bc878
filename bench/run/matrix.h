// bench/run/matrix.h: the benchmark matrix, presets x batch x seq x rungs, as a
// list of cells, each one fully resolved RunConfig measured in its own child
// process.
//
// A matrix comes from the built-in default (CPU: cpu-default; GPU:
// gpt2-124m at B16 T1024; the whole ladder), from a JSON matrix file, or from
// CLI options. Besides the measured rungs it holds the parity cells that
// correctness checks need: grad-accum is compared against one step with the
// same total batch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "bench/measure/config_options.h"
#include "bench/run/cell.h"
#include "variants/config/config.h"
#include "variants/config_fields.h"

namespace ladder {

struct MatrixSpec {
  std::string device;                // resolved: "cpu", "cuda", "cuda:N"
  std::vector<std::string> presets;  // at least one
  std::vector<int64_t> batches;      // empty: each preset's default
  std::vector<int64_t> seqs;         // empty: each preset's default
  std::vector<std::string> rungs;    // empty: the mode's default set
  std::string mode = "ladder";       // "ladder", "ablation" or "memory"
  int64_t parity_steps = 5;
  int nproc_per_node = 1;            // ranks of the ddp rung (resolved by the caller)
  // The device's memory (0: unknown). Parity references of accumulation
  // (one step of the whole batch) are sized to fit in it.
  int64_t device_memory_bytes = 0;
  // --memory-budget (0: none): a cell whose estimate per device
  // (step_memory_estimate_bytes) exceeds it is not run, and says so.
  int64_t memory_budget_bytes = 0;
  // The ddp rung on one device runs one rank, which shows nothing of data
  // parallelism: it is not runnable there unless asked for by name
  // (--rungs ddp) or with --nproc-per-node (see build_cells).
  bool ddp_requested = false;
  // PyTorch peers (bench/run/peers.h): one cell per peer and shape, after every rung.
  std::vector<std::string> peers;
  Overrides overrides;
};

// Reads a matrix file: keys presets, batch, seq (each a value or a list),
// rungs, mode, device, parity_steps, and every config field by its name
// (variants/config_fields.cpp: steps, warmup, seed, n_embd, max_lr, ...).
// Unknown keys, wrong types, values out of bounds and invalid JSON throw
// ConfigError naming the file and the key.
void read_matrix_file(const std::string& path, MatrixSpec& spec);

// Resolves presets x batches x seqs x rungs into cells, fp32 first for each
// shape; then the peers of every shape (spec.peers). Throws ConfigError for unknown presets or rungs and invalid configs
// (e.g. a total batch not divisible by B*T*world).
//
// Accumulation parity: a rung with grad-accum is checked against one step of
// its whole batch (".parity-single"). That step must fit in the device's
// memory: at most 4 micro-steps are replayed, fewer (down to 2) while the
// single step's estimated memory exceeds kParityMemoryFraction of the device,
// and then the micro-batch is halved for both sides of the comparison (the
// accumulating side becomes ".parity-accum"). Any pair proves the same thing:
// m accumulated micro-steps of B' equal one step of m*B'.
std::vector<Cell> build_cells(const MatrixSpec& spec);

inline constexpr double kParityMemoryFraction = 0.8;
// What one step of `cfg` is estimated to need (bench/measure/report/memory.h, fp32, the
// explicit attention), doubled for the CUDA-graph path, whose warm-up and
// capture each hold a step's activations.
int64_t step_memory_estimate_bytes(const RunConfig& cfg);

nlohmann::json cells_to_json(const std::vector<Cell>& cells);

}  // namespace ladder
