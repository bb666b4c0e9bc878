// variants/data/data_section.h: what a rung report records about its data (the
// report's data section), as a struct (profiler/common/fields.h): each
// token source fills its part (variants/data/data.cpp, token_shards.cpp), the
// prefetching wrapper what the run consumed (prefetch.cpp), and the JSON and
// its schema come from the field lists below.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/common/fields.h"

namespace ladder {

using fields::Maybe;

struct PrefetchSection {
  bool enabled = false;
  std::string mode;
  int64_t batches_ready_on_request = 0, batches_not_predicted = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("enabled", s.enabled);
    v("mode", s.mode);
    v("batches_ready_on_request", s.batches_ready_on_request, Doc().min(0));
    v("batches_not_predicted", s.batches_not_predicted, Doc().min(0));
  }
};

struct ShardSection {
  std::string path, format, content_hash;
  int64_t size_bytes = 0, header_bytes = 0, tokens = 0, rows = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("path", s.path);
    v("format", s.format, Doc().one_of({"llmc", "raw-u16"}));
    v("size_bytes", s.size_bytes, Doc().min(0));
    v("header_bytes", s.header_bytes, Doc().min(0));
    v("tokens", s.tokens, Doc().min(0));
    v("rows", s.rows, Doc().min(1));
    v("content_hash", s.content_hash, Doc().matching("^sha1:[0-9a-f]{40}$"));
  }
};

struct DataSection {
  std::string kind;  // "synthetic", "token_shards"
  PrefetchSection prefetch;
  int64_t batches_consumed = 0, tokens_consumed = 0;
  // Both kinds (absent in some older reports).
  Maybe<bool> pinned_memory, fixed_batch;
  Maybe<int64_t> seed, vocab_size, rank, world_size;
  // synthetic
  Maybe<std::string> generator;
  // token_shards (required there: schema_extra)
  Maybe<std::string> pattern, format, content_hash_covers, order, rank_slice, vocab_check;
  Maybe<std::vector<ShardSection>> shards;
  Maybe<int64_t> tokens_total, rows_total, row_tokens;

  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("kind", s.kind, Doc().one_of({"synthetic", "token_shards"}));
    v("prefetch", s.prefetch);
    v("batches_consumed", s.batches_consumed,
      Doc("batches handed to the step (warmup, measured and op-count steps)").min(0));
    v("tokens_consumed", s.tokens_consumed, Doc("input tokens handed to the step by this rank").min(0));
    v("pinned_memory", s.pinned_memory);
    v("seed", s.seed);
    v("vocab_size", s.vocab_size);
    v("rank", s.rank);
    v("world_size", s.world_size);
    v("fixed_batch", s.fixed_batch);
    v("generator", s.generator);
    v("pattern", s.pattern);
    v("format", s.format, Doc().one_of({"auto", "raw-u16"}));
    v("shards", s.shards);
    v("content_hash_covers", s.content_hash_covers);
    v("tokens_total", s.tokens_total, Doc().min(1));
    v("rows_total", s.rows_total, Doc().min(1));
    v("row_tokens", s.row_tokens, Doc().min(2));
    v("order", s.order);
    v("rank_slice", s.rank_slice);
    v("vocab_check", s.vocab_check);
  }
  // Token shards name their shards and how they are read; at least one shard.
  static void schema_extra(nlohmann::json& schema) {
    schema["description"] = "the token source: what it is, and what the run consumed";
    schema["properties"]["shards"]["minItems"] = 1;
    schema["if"] = {{"properties", {{"kind", {{"const", "token_shards"}}}}}};
    schema["then"] = {{"required", {"pattern", "format", "shards", "tokens_total", "rows_total", "row_tokens",
                                    "order", "rank_slice"}}};
  }
};

// The stream facts both token sources report (variants/data/data.h's SyntheticSpec,
// variants/data/token_shards.h's ShardSpec): seed, vocabulary, rank, world size,
// fixed batch, pinned memory.
template <class Spec>
void describe_stream(const Spec& s, DataSection& d) {
  d.seed = int64_t(s.seed);
  d.vocab_size = s.vocab;
  d.rank = s.rank;
  d.world_size = s.world;
  d.fixed_batch = s.fixed_batch;
  d.pinned_memory = s.pin_memory;
}

}  // namespace ladder
