// variants/data/token_shards.cpp: memory-mapped llm.c / raw uint16 token shards
// (see token_shards.h).
#include "variants/data/token_shards.h"

#include <glob.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <c10/util/hash.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "variants/config/config.h"

namespace ladder {

namespace fs = std::filesystem;

std::vector<std::string> expand_shard_pattern(const std::string& pattern) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> paths;
  if (rc == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  if (rc != 0 && rc != GLOB_NOMATCH)
    throw ConfigError(fmt::format("--data: cannot expand '{}' (glob error {})", pattern, rc));
  if (paths.empty())
    throw ConfigError(fmt::format("--data: '{}' matched no files; expected a token shard or a glob "
                                  "of shards such as 'data/fineweb_train_*.bin'",
                                  pattern));
  std::sort(paths.begin(), paths.end());  // byte order, whatever the locale
  return paths;
}

std::string shard_content_hash(const uint8_t* bytes, int64_t size) {
  constexpr int64_t kSpan = 64 * 1024;
  const int64_t head = std::min(size, kSpan);
  const int64_t tail = std::min(size, kSpan);
  std::string input(reinterpret_cast<const char*>(bytes), size_t(head));
  input.append(reinterpret_cast<const char*>(bytes + size - tail), size_t(tail));
  input += std::to_string(size);
  return "sha1:" + c10::sha1(input).str();
}

namespace {

struct Shard {
  std::string path;
  std::string format;    // "llmc" or "raw-u16"
  int64_t size_bytes = 0;
  int64_t header_bytes = 0;
  int64_t tokens = 0;
  int64_t rows = 0;      // (tokens - 1) / T
  std::string content_hash;
  torch::Tensor mapping;  // (size_bytes / 2,) uint16, the whole file mapped
  const uint16_t* data = nullptr;  // the first token

  int64_t byte_offset(int64_t token) const { return header_bytes + 2 * token; }
};

int32_t read_i32_le(const unsigned char* p) {
  return int32_t(uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24);
}

// Reads up to the first `n` bytes of `path`.
std::vector<unsigned char> read_head(const std::string& path, int64_t n) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ConfigError(fmt::format("{}: cannot open for reading: {}", path, std::strerror(errno)));
  std::vector<unsigned char> buf(static_cast<size_t>(n));
  f.read(reinterpret_cast<char*>(buf.data()), n);
  buf.resize(size_t(f.gcount()));
  return buf;
}

// Header and size checks; fills format, header_bytes and tokens.
void check_layout(Shard& s, const std::string& format) {
  const auto head = read_head(s.path, kLlmcHeaderBytes);
  const bool has_magic = head.size() >= 4 && read_i32_le(head.data()) == kLlmcMagic;
  if (format == "raw-u16") {
    if (has_magic)
      throw ConfigError(fmt::format(
          "{}: byte offset 0 holds the llm.c magic {}, but --data-format raw-u16 would read the "
          "header as tokens; expected a raw uint16 file, or drop --data-format to read the llm.c header",
          s.path, kLlmcMagic));
    if (s.size_bytes % 2 != 0)
      throw ConfigError(fmt::format(
          "{}: truncated: {} bytes is not a whole number of 2-byte uint16 tokens (the token at byte "
          "offset {} is cut); expected an even size",
          s.path, s.size_bytes, s.size_bytes - 1));
    s.format = "raw-u16";
    s.header_bytes = 0;
    s.tokens = s.size_bytes / 2;
    return;
  }
  if (head.size() < 4)
    throw ConfigError(fmt::format(
        "{}: truncated: {} bytes, shorter than the llm.c magic (int32 at byte offset 0); expected "
        "an llm.c shard, or --data-format raw-u16 for a raw nanoGPT file",
        s.path, s.size_bytes));
  if (!has_magic)
    throw ConfigError(fmt::format(
        "{}: byte offset 0 (llm.c header magic): got {}, expected {}; a raw nanoGPT uint16 file "
        "needs --data-format raw-u16",
        s.path, read_i32_le(head.data()), kLlmcMagic));
  if (s.size_bytes < kLlmcHeaderBytes)
    throw ConfigError(fmt::format(
        "{}: truncated: {} bytes, shorter than the {}-byte llm.c header (256 x int32) its magic "
        "announces; expected at least {} bytes",
        s.path, s.size_bytes, kLlmcHeaderBytes, kLlmcHeaderBytes));
  const int32_t version = read_i32_le(head.data() + 4);
  if (version != kLlmcVersion)
    throw ConfigError(fmt::format(
        "{}: byte offset 4 (llm.c header version): got {}, expected {} (uint16 GPT-2 tokens)",
        s.path, version, kLlmcVersion));
  const int64_t count = read_i32_le(head.data() + 8);
  if (count < 0)
    throw ConfigError(fmt::format(
        "{}: byte offset 8 (llm.c header token count): got {}, expected a count >= 0", s.path, count));
  const int64_t expected = kLlmcHeaderBytes + 2 * count;
  if (s.size_bytes < expected)
    throw ConfigError(fmt::format(
        "{}: truncated: the token count at byte offset 8 is {}, so the file should have {} + 2*{} = "
        "{} bytes, but it has {} ({} bytes missing)",
        s.path, count, kLlmcHeaderBytes, count, expected, s.size_bytes, expected - s.size_bytes));
  if (s.size_bytes > expected)
    throw ConfigError(fmt::format(
        "{}: the token count at byte offset 8 ({}) disagrees with the file size: {} bytes leave {} "
        "bytes after the {}-byte header, not {}; expected a file of {} bytes",
        s.path, count, s.size_bytes, s.size_bytes - kLlmcHeaderBytes, kLlmcHeaderBytes, 2 * count,
        expected));
  s.format = "llmc";
  s.header_bytes = kLlmcHeaderBytes;
  s.tokens = count;
}

[[noreturn]] void bad_token(const Shard& s, int64_t token, int64_t vocab) {
  throw ConfigError(fmt::format(
      "{}: token id {} at byte offset {} (token {}) is >= the vocabulary size {}; expected ids in "
      "[0, {}) (a shard tokenized for another vocabulary? --vocab sets V)",
      s.path, s.data[token], s.byte_offset(token), token, vocab, vocab));
}

// Token ids in [first, first + n) of `s` must be < vocab.
void check_ids(const Shard& s, int64_t first, int64_t n, int64_t vocab) {
  for (int64_t t = first; t < first + n; ++t)
    if (s.data[t] >= vocab) bad_token(s, t, vocab);
}

Shard open_shard(const std::string& path, const ShardSpec& spec) {
  Shard s;
  s.path = path;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw ConfigError(fmt::format("{}: not a regular file; expected a token shard", path));
  s.size_bytes = int64_t(fs::file_size(path, ec));
  if (ec) throw ConfigError(fmt::format("{}: cannot read its size: {}", path, ec.message()));
  check_layout(s, spec.format);
  const int64_t need = spec.batch * spec.seq + 1;
  if (s.tokens < need)
    throw ConfigError(fmt::format(
        "{}: {} tokens, shorter than one batch: --batch {} x --seq {} reads {} rows of T+1 tokens, "
        "which needs {} tokens; expected at least {} tokens per shard",
        path, s.tokens, spec.batch, spec.seq, spec.batch, need, need));
  s.rows = (s.tokens - 1) / spec.seq;
  // A private mapping of the whole file; pages load as rows are touched.
  s.mapping = torch::from_file(path, /*shared=*/false, s.size_bytes / 2, torch::kUInt16);
  const auto* base = static_cast<const uint8_t*>(s.mapping.const_data_ptr());
  s.data = reinterpret_cast<const uint16_t*>(base + s.header_bytes);
  s.content_hash = shard_content_hash(base, s.size_bytes);
  // A cheap sample of ids: the first 64 Ki tokens and 16 windows of 4 Ki.
  constexpr int64_t kHead = 64 * 1024, kWindows = 16, kWindow = 4 * 1024;
  check_ids(s, 0, std::min(s.tokens, kHead), spec.vocab);
  if (s.tokens > kHead)
    for (int64_t w = 0; w < kWindows; ++w) {
      const int64_t len = std::min(s.tokens, kWindow);
      check_ids(s, (s.tokens - len) * w / (kWindows - 1), len, spec.vocab);
    }
  return s;
}

class ShardTokens final : public TokenSource {
 public:
  explicit ShardTokens(const ShardSpec& spec) : s_(spec) {
    for (const auto& path : expand_shard_pattern(spec.pattern)) {
      shards_.push_back(open_shard(path, spec));
      row_start_.push_back(rows_);
      rows_ += shards_.back().rows;
      tokens_ += shards_.back().tokens;
    }
    if (rows_ < spec.world * spec.batch)
      throw ConfigError(fmt::format(
          "--data: '{}' holds {} rows of T+1 tokens, fewer than one global batch of world size {} x "
          "--batch {} = {} rows; expected more data or a smaller batch",
          spec.pattern, rows_, spec.world, spec.batch, spec.world * spec.batch));
  }

  Batch batch(int64_t step, int64_t micro) override {
    const int64_t B = s_.batch, T = s_.seq;
    BatchToFill f = batch_to_fill(s_, step, micro);
    int64_t* px = f.x;
    int64_t* py = f.y;
    for (int64_t b = 0; b < B; ++b) {
      const auto [shard, row] = locate(f.first_row + b);
      const Shard& s = shards_[size_t(shard)];
      const uint16_t* src = s.data + row * T;  // T+1 tokens
      uint16_t hi = src[T];
      for (int64_t j = 0; j < T; ++j) {
        px[b * T + j] = src[j];
        py[b * T + j] = src[j + 1];
        hi = std::max(hi, src[j]);
      }
      if (hi >= s_.vocab) check_ids(s, row * T, T + 1, s_.vocab);  // throws, naming the token
    }
    return f.batch;
  }

  DataSection describe() const override {
    DataSection d;
    d.kind = "token_shards";
    std::vector<ShardSection> shards;
    for (const auto& s : shards_)
      shards.push_back({s.path, s.format, s.content_hash, s.size_bytes, s.header_bytes, s.tokens, s.rows});
    d.shards = std::move(shards);
    d.pattern = s_.pattern;
    d.format = s_.format;
    d.content_hash_covers = "sha1 of the first 64 KiB, the last 64 KiB and the size in decimal";
    d.tokens_total = tokens_;
    d.rows_total = rows_;
    d.row_tokens = s_.seq + 1;
    d.order = "n = ((step*micro_steps + micro)*world + rank)*B + b; epoch n / rows_total; shards in path order; "
              "inside shard s, row (a*j + c) mod rows_s, a seeded bijection (variants/data/token_shards.h)";
    d.rank_slice = fmt::format("rank {} of {}: B-row block {} of every global batch of {} rows; disjoint across "
                               "ranks within an epoch",
                               s_.rank, s_.world, s_.rank, s_.world * s_.batch);
    d.vocab_check = "every batch as it is copied, and at open the first 65,536 tokens and 16 windows of 4,096 "
                    "tokens of each shard";
    describe_stream(s_, d);
    return d;
  }

 private:
  struct RowRef {
    int64_t shard, row;
  };

  // Logical row n -> (shard, row inside it); see the formula in the header.
  RowRef locate(int64_t n) const {
    const uint64_t epoch = uint64_t(n / rows_);
    const int64_t i = n % rows_;
    const int64_t shard =
        int64_t(std::upper_bound(row_start_.begin(), row_start_.end(), i) - row_start_.begin()) - 1;
    const uint64_t rows = uint64_t(shards_[size_t(shard)].rows);
    const uint64_t j = uint64_t(i - row_start_[size_t(shard)]);
    const uint64_t base =
        s_.seed * 0xD1B54A32D192ED03ULL + epoch * 0x9E3779B97F4A7C15ULL + 2 * uint64_t(shard);
    const uint64_t c = splitmix64(base + 1) % rows;
    uint64_t a = splitmix64(base) % rows;
    while (std::gcd(a, rows) != 1) a = (a + 1) % rows;
    // (a*j + c) mod rows without overflow: rows < 2^63, so use 128-bit.
    const auto k = uint64_t((unsigned __int128)a * j % rows + c) % rows;
    return {shard, int64_t(k)};
  }

  ShardSpec s_;
  std::vector<Shard> shards_;
  std::vector<int64_t> row_start_;  // first global row of each shard
  int64_t rows_ = 0, tokens_ = 0;
};

}  // namespace

std::unique_ptr<TokenSource> make_shard_source(const ShardSpec& spec) {
  return std::make_unique<ShardTokens>(spec);
}

}  // namespace ladder
