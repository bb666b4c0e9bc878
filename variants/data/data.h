// variants/data/data.h: where a step's tokens come from.
//
// TokenSource is the interface the step reads: the seeded synthetic stream
// here, memory-mapped token shards in variants/data/token_shards.h, and the
// prefetching wrapper in variants/data/prefetch.h (variants/data/data_source.h picks
// one from the run's config). Batches are a pure function of (seed, step,
// micro-step, rank), so a re-run or resumed rung sees exactly the same data.
#pragma once

#include <cstdint>
#include <memory>

#include <torch/torch.h>

#include "variants/data/data_section.h"

namespace ladder {

struct Batch {
  torch::Tensor x;  // (B, T) int64 inputs
  torch::Tensor y;  // (B, T) int64 targets, x shifted left by one
};

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // The batch for optimizer step `step` (micro-step `micro` of it) on `rank`.
  virtual Batch batch(int64_t step, int64_t micro = 0) = 0;
  // What the report records about the data (its data section).
  virtual DataSection describe() const = 0;
};

// Uniform pseudo-random tokens from a counter-based hash (splitmix64), so any
// position of the stream is computable on its own and from Python:
//   row r = ((step * micro_steps + micro) * world + rank) * B + b
//   token(r, j) = splitmix64(seed * 0xD1B54A32D192ED03 + r * (T + 1) + j) % V,  j in [0, T]
//   x = token(r, 0..T-1), y = token(r, 1..T)
// With fixed_batch every step returns the batch of step 0.
struct SyntheticSpec {
  int64_t batch, seq, vocab;
  uint64_t seed;
  int64_t rank = 0, world = 1, micro_steps = 1;
  bool fixed_batch = false;
  bool pin_memory = false;  // allocate batches in page-locked memory (CUDA copies)
};
std::unique_ptr<TokenSource> make_synthetic_source(const SyntheticSpec& spec);

uint64_t splitmix64(uint64_t x);

// A batch both token sources fill: x and y, (B, T) int64, page-locked where
// the spec asks (pin_memory), their data, and the global index of the
// batch's first row, ((step * micro_steps + micro) * world + rank) * B (step
// 0's with fixed_batch). Spec: SyntheticSpec or ShardSpec (token_shards.h).
struct BatchToFill {
  Batch batch;
  int64_t* x;
  int64_t* y;
  int64_t first_row;
};
template <class Spec>
BatchToFill batch_to_fill(const Spec& s, int64_t step, int64_t micro) {
  if (s.fixed_batch) step = micro = 0;
  const auto opts = torch::TensorOptions().dtype(torch::kInt64).pinned_memory(s.pin_memory);
  BatchToFill f{{torch::empty({s.batch, s.seq}, opts), torch::empty({s.batch, s.seq}, opts)}, nullptr, nullptr, 0};
  f.x = f.batch.x.data_ptr<int64_t>();
  f.y = f.batch.y.data_ptr<int64_t>();
  f.first_row = ((step * s.micro_steps + micro) * s.world + s.rank) * s.batch;
  return f;
}

}  // namespace ladder
