// variants/data/data_source.h: the token source a run's config asks for.
//
// Synthetic tokens (variants/data/data.h) unless cfg.data.path names token shards
// (variants/data/token_shards.h); either way wrapped by the prefetcher
// (variants/data/prefetch.h), on a background thread unless cfg.data.prefetch is
// off. On CUDA the batches are made in pinned host memory so the step's
// non_blocking copy to the device is asynchronous.
#pragma once

#include <memory>

#include <torch/torch.h>

#include "variants/config/config.h"
#include "variants/data/data.h"
#include "variants/data/prefetch.h"

namespace ladder {

// Throws ConfigError for bad shards (see token_shards.h).
std::unique_ptr<TokenSource> make_token_source(const RunConfig& cfg, const torch::Device& device,
                                               PrefetchListener listener = {});

// Opens and checks the config's shards, as make_token_source does, without
// making a batch: bad data is reported before anything runs.
void check_token_source(const RunConfig& cfg);

}  // namespace ladder
