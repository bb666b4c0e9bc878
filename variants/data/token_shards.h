// variants/data/token_shards.h: pre-tokenized token shards (llm.c / nanoGPT .bin)
// as a TokenSource, read by memory map.
//
// Formats (GPT-2 token ids as little-endian uint16):
//   llm.c    a 256 x int32 header (magic 20240520, version 1, token count, the
//            rest zero), then the tokens. Detected by its magic (--data-format auto).
//   raw-u16  nanoGPT's prepare.py output: tokens only (--data-format raw-u16).
// Each file is mapped with at::from_file (a private, read-only-used mmap:
// pages are faulted in as rows are read; the file is never copied whole).
// A path or a glob names the shards; they are walked in lexicographic path
// order. Every shard is checked when opened (header, size, at least one batch,
// a sample of token ids) and every batch's token ids are checked as they are
// copied; bad input throws ConfigError naming the file, the byte offset or
// field, the value and what was expected.
//
// Which tokens a batch holds is a pure function of (seed, step, micro, rank):
//   A row is T+1 consecutive tokens: row k of a shard of n tokens is tokens
//   [k*T, k*T + T] (k < R_s = (n - 1) / T); x is its first T, y its last T.
//   The shards' rows, shard after shard, form a list of R = sum R_s rows.
//   Logical row, the same counter as the synthetic stream (variants/data/data.h):
//     n = ((step * micro_steps + micro) * world + rank) * B + b,  b < B
//   Epoch e = n / R; i = n % R lies in shard s at local index j; the row read
//   is k = (a * j + c) mod R_s, a seeded bijection of the shard's rows with
//     base = seed * 0xD1B54A32D192ED03 + e * 0x9E3779B97F4A7C15 + 2 * s  (mod 2^64)
//     c = splitmix64(base + 1) mod R_s
//     a = the first of a0, a0+1, ... (mod R_s), a0 = splitmix64(base) mod R_s,
//         with gcd(a, R_s) = 1
// So within an epoch every row is read exactly once, shard by shard in order,
// in a seed-dependent order inside each shard. Rank r's slice is the B-row
// block r of every global batch of world * B rows: ranks never share a row
// within an epoch. With fixed_batch every step reads step 0's rows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "variants/data/data.h"

namespace ladder {

inline constexpr int32_t kLlmcMagic = 20240520;
inline constexpr int32_t kLlmcVersion = 1;
inline constexpr int64_t kLlmcHeaderInts = 256;
inline constexpr int64_t kLlmcHeaderBytes = kLlmcHeaderInts * 4;

struct ShardSpec {
  std::string pattern;          // a path or a glob
  std::string format = "auto";  // "auto" (llm.c header required) or "raw-u16"
  int64_t batch, seq, vocab;
  uint64_t seed;
  int64_t rank = 0, world = 1, micro_steps = 1;
  bool fixed_batch = false;
  bool pin_memory = false;  // allocate batches in page-locked memory (CUDA copies)
};

// The paths `pattern` names, sorted. Throws ConfigError when it names none.
std::vector<std::string> expand_shard_pattern(const std::string& pattern);

// Opens and checks every shard. Throws ConfigError on bad input.
std::unique_ptr<TokenSource> make_shard_source(const ShardSpec& spec);

// The fingerprint the report records for a file: sha1 of its first 64 KiB,
// its last 64 KiB and its size in decimal ("sha1:<40 hex>").
std::string shard_content_hash(const uint8_t* bytes, int64_t size);

}  // namespace ladder
