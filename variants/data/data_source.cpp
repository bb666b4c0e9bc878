// variants/data/data_source.cpp: see data_source.h.
#include "variants/data/data_source.h"

#include "variants/data/token_shards.h"

namespace ladder {

namespace {
std::unique_ptr<TokenSource> make_inner(const RunConfig& c, bool pin_memory) {
  if (c.data.path.empty()) {
    SyntheticSpec spec{c.batch, c.seq, c.model.vocab_size, c.seed};
    spec.rank = c.rank;
    spec.world = c.world_size;
    spec.micro_steps = c.micro_steps();
    spec.fixed_batch = c.fixed_batch;
    spec.pin_memory = pin_memory;
    return make_synthetic_source(spec);
  }
  ShardSpec spec{c.data.path, c.data.format, c.batch, c.seq, c.model.vocab_size, c.seed};
  spec.rank = c.rank;
  spec.world = c.world_size;
  spec.micro_steps = c.micro_steps();
  spec.fixed_batch = c.fixed_batch;
  spec.pin_memory = pin_memory;
  return make_shard_source(spec);
}
}  // namespace

std::unique_ptr<TokenSource> make_token_source(const RunConfig& cfg, const torch::Device& device,
                                               PrefetchListener listener) {
  return make_prefetching_source(make_inner(cfg, device.is_cuda()), cfg.micro_steps(),
                                 cfg.data.prefetch, std::move(listener), device);
}

void check_token_source(const RunConfig& cfg) {
  if (!cfg.data.path.empty()) make_inner(cfg, /*pin_memory=*/false);
}

}  // namespace ladder
