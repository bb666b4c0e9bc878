// bench/memory.cpp: see memory.h.
#include "bench/memory.h"

#include <nlohmann/json.hpp>

namespace ladder {

MemoryEstimate estimate_memory(const ModelConfig& m, int64_t n_params, int64_t batch, int64_t seq,
                               int64_t bytes_per_element) {
  const int64_t B = batch, T = seq, C = m.n_embd, V = m.vocab_size;
  MemoryEstimate e;
  e.parameter_bytes = n_params * 4;
  e.gradient_bytes = n_params * 4;
  e.optimizer_state_bytes = 2 * n_params * 4;
  const int64_t per_layer = 16 * B * T * C + m.n_head * B * T * T;
  const int64_t head = 2 * B * T * C + 2 * B * T * V;
  e.activation_bytes = (m.n_layer * per_layer + head) * bytes_per_element;
  e.total_bytes = e.parameter_bytes + e.gradient_bytes + e.optimizer_state_bytes + e.activation_bytes;
  return e;
}

void to_json(nlohmann::json& j, const MemoryEstimate& e) {
  j = {{"parameter_bytes", e.parameter_bytes},
       {"gradient_bytes", e.gradient_bytes},
       {"optimizer_state_bytes", e.optimizer_state_bytes},
       {"activation_bytes", e.activation_bytes},
       {"total_bytes", e.total_bytes}};
}

}  // namespace ladder
