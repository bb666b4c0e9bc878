// bench/measure/report/memory.cpp: see memory.h.
#include "bench/measure/report/memory.h"

#include <algorithm>

#include "variants/switches/switch.h"

namespace ladder {

MemoryEstimate estimate_memory(const ModelConfig& m, int64_t n_params, int64_t batch, int64_t seq,
                               const MemoryOptions& o) {
  const int64_t B = batch, T = seq, C = m.n_embd, V = m.vocab_size;
  MemoryEstimate e;
  e.parameter_bytes = n_params * 4;
  e.gradient_bytes = n_params * 4;
  e.optimizer_state_bytes = 2 * n_params * 4 / std::max<int64_t>(o.optimizer_shards, 1);
  const int64_t per_layer = 16 * B * T * C + m.n_head * B * T * T;
  const int64_t head = 2 * B * T * C + 2 * B * T * V;
  const int64_t blocks = o.checkpoint_blocks ? m.n_layer * B * T * C + per_layer : m.n_layer * per_layer;
  e.activation_bytes = (blocks + head) * 4;
  e.total_bytes = e.parameter_bytes + e.gradient_bytes + e.optimizer_state_bytes + e.activation_bytes;
  e.optimizer_shards = o.optimizer_shards;
  e.checkpoint_blocks = o.checkpoint_blocks;
  return e;
}

MemoryOptions memory_options(const RunConfig& cfg, const StepPlan& plan) {
  MemoryOptions o;
  if (cfg.sw.on(switches::ddp) && plan.acts(switches::zero1)) o.optimizer_shards = cfg.world_size;
  o.checkpoint_blocks = plan.model.checkpoint_blocks;
  return o;
}

}  // namespace ladder
