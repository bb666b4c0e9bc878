// variants/config/model_config.h: GPT-2's shape, apart from the run's configuration
// (config.h) so that what needs only the shape (the GEMM sites, gemm_sites.h)
// does not include the configuration, whose fields read those sites' plan.
#pragma once

#include <cstdint>

namespace ladder {

struct ModelConfig {
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_embd = 768;
  int64_t block_size = 1024;  // maximum sequence length (wpe rows)
  int64_t vocab_size = 50257;
};

}  // namespace ladder
