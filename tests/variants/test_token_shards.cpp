// tests/variants/test_token_shards.cpp: the shard reader. Both formats give the same
// batches as the tokens written; rows are row-aligned windows shifted by
// one; one epoch reads every row once, shard by shard in path order; batches
// are a pure function of (seed, step, micro, rank) and ranks tile the
// single-rank batch without overlap; files are mapped, not read; the report
// names each shard with its size and hash; a bad id the open-time sample
// missed is caught when its batch is made. (Bad files through the CLI, with
// exit code 2, are in test_data_cli.cpp.)
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/shard_files.h"
#include "variants/config/config.h"
#include "variants/data/token_shards.h"

namespace ladder {
namespace {

namespace fs = std::filesystem;
using test::pattern_tokens;
using test::write_llmc;
using test::write_raw;

class TokenShards : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ladder_shards_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ShardSpec spec(const fs::path& pattern, int64_t B = 3, int64_t T = 8) const {
    return ShardSpec{pattern.string(), "auto", B, T, 50257, /*seed=*/5};
  }

  fs::path dir_;
};

// tokens[i] = i: a window's first token names its position.
std::vector<uint16_t> counting(int64_t n, uint16_t offset = 0) {
  std::vector<uint16_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[size_t(i)] = uint16_t(offset + i);
  return t;
}

TEST_F(TokenShards, BothFormatsRoundTripToRowAlignedWindows) {
  const int64_t T = 8, n = 40 * T + 1;  // 40 rows
  const auto tokens = counting(n);
  write_llmc(dir_ / "a.bin", tokens);
  write_raw(dir_ / "a.raw", tokens);
  auto llmc = make_shard_source(spec(dir_ / "a.bin"));
  ShardSpec raw_spec = spec(dir_ / "a.raw");
  raw_spec.format = "raw-u16";
  auto raw = make_shard_source(raw_spec);
  for (int64_t step = 0; step < 20; ++step) {
    const Batch a = llmc->batch(step, 0), b = raw->batch(step, 0);
    ASSERT_EQ(a.x.sizes(), (std::vector<int64_t>{3, T}));
    EXPECT_EQ(a.x.dtype(), torch::kInt64);
    EXPECT_TRUE(torch::equal(a.x, b.x)) << "step " << step;
    EXPECT_TRUE(torch::equal(a.y, b.y)) << "step " << step;
    for (int64_t r = 0; r < 3; ++r) {
      const int64_t start = a.x[r][0].item<int64_t>();
      EXPECT_EQ(start % T, 0) << "row starts at a multiple of T";
      EXPECT_TRUE(torch::equal(a.x[r], torch::arange(start, start + T)));
      EXPECT_TRUE(torch::equal(a.y[r], torch::arange(start + 1, start + T + 1)));
    }
  }
  EXPECT_EQ(llmc->describe().shards->at(0).format, "llmc");
  EXPECT_EQ(raw->describe().shards->at(0).format, "raw-u16");
  EXPECT_EQ(llmc->describe().shards->at(0).tokens, n);
}

TEST_F(TokenShards, OneEpochReadsEveryRowOnceShardByShardInPathOrder) {
  const int64_t T = 8, B = 2;
  // Rows per shard 5, 7, 4 (extra tokens that make no full row are unused);
  // token values encode the shard: shard s holds s*10000 + i.
  const std::vector<int64_t> rows = {5, 7, 4};
  // Written out of order: the reader sorts by path.
  const std::vector<std::string> names = {"s_000002.bin", "s_000000.bin", "s_000001.bin"};
  const std::vector<int64_t> shard_of_name = {2, 0, 1};
  for (size_t f = 0; f < names.size(); ++f) {
    const int64_t s = shard_of_name[f];
    write_llmc(dir_ / names[f], counting(rows[size_t(s)] * T + 1 + s, uint16_t(s * 10000)));
  }
  auto src = make_shard_source(spec(dir_ / "s_*.bin", B, T));
  const auto d = src->describe();
  ASSERT_EQ(d.rows_total, 16);
  EXPECT_EQ(d.shards->at(0).path, (dir_ / "s_000000.bin").string());
  EXPECT_EQ(d.shards->at(2).path, (dir_ / "s_000002.bin").string());
  std::set<std::pair<int64_t, int64_t>> seen;
  int64_t last_shard = 0;
  for (int64_t step = 0; step < 16 / B; ++step) {
    const Batch b = src->batch(step, 0);
    for (int64_t r = 0; r < B; ++r) {
      const int64_t first = b.x[r][0].item<int64_t>();
      const int64_t shard = first / 10000, pos = first % 10000;
      EXPECT_GE(shard, last_shard) << "shards are walked in order";
      last_shard = shard;
      EXPECT_EQ(pos % T, 0);
      EXPECT_TRUE(seen.insert({shard, pos / T}).second) << "row read twice in one epoch";
    }
  }
  EXPECT_EQ(seen.size(), 16u) << "every row once";
  // The next epoch starts again at shard 0, in another order.
  EXPECT_EQ(src->batch(16 / B, 0).x[0][0].item<int64_t>() / 10000, 0);
}

TEST_F(TokenShards, BatchesArePureFunctionsOfSeedStepAndMicroStep) {
  write_llmc(dir_ / "a.bin", counting(200 * 8 + 1));
  auto a = make_shard_source(spec(dir_ / "a.bin"));
  auto again = make_shard_source(spec(dir_ / "a.bin"));
  ShardSpec other = spec(dir_ / "a.bin");
  other.seed = 6;
  auto reseeded = make_shard_source(other);
  bool seed_matters = false;
  for (int64_t step : {7, 0, 3, 3, 60}) {  // any order: no hidden cursor
    EXPECT_TRUE(torch::equal(a->batch(step, 0).x, again->batch(step, 0).x)) << step;
    seed_matters |= !torch::equal(a->batch(step, 0).x, reseeded->batch(step, 0).x);
  }
  EXPECT_TRUE(seed_matters);
  EXPECT_FALSE(torch::equal(a->batch(0, 0).x, a->batch(1, 0).x));
  ShardSpec fixed = spec(dir_ / "a.bin");
  fixed.fixed_batch = true;
  auto f = make_shard_source(fixed);
  EXPECT_TRUE(torch::equal(f->batch(9, 0).x, a->batch(0, 0).x));
}

TEST_F(TokenShards, RanksReadDisjointBlocksOfTheSingleRankBatch) {
  write_llmc(dir_ / "a.bin", counting(300 * 8 + 1));
  const int64_t world = 3, B = 2, micro_steps = 2;
  ShardSpec single = spec(dir_ / "a.bin", world * B);
  auto one = make_shard_source(single);  // one rank, world*B rows, no accumulation
  std::vector<std::unique_ptr<TokenSource>> ranks;
  for (int64_t r = 0; r < world; ++r) {
    ShardSpec s = spec(dir_ / "a.bin", B);
    s.rank = r;
    s.world = world;
    s.micro_steps = micro_steps;
    ranks.push_back(make_shard_source(s));
  }
  std::set<int64_t> starts;  // 48 rows of one epoch of 300: none repeats
  for (int64_t step = 0; step < 4; ++step) {
    for (int64_t m = 0; m < micro_steps; ++m) {
      // Global batch g = step*micro_steps + m of the single rank, split by rank.
      const Batch whole = one->batch(step * micro_steps + m, 0);
      for (int64_t r = 0; r < world; ++r) {
        const Batch part = ranks[size_t(r)]->batch(step, m);
        EXPECT_TRUE(torch::equal(part.x, whole.x.slice(0, r * B, (r + 1) * B))) << step << " " << m << " " << r;
        for (int64_t b = 0; b < B; ++b)
          EXPECT_TRUE(starts.insert(part.x[b][0].item<int64_t>()).second) << "two ranks share a row";
      }
    }
  }
}

TEST_F(TokenShards, FilesAreMemoryMappedNotRead) {
  const fs::path path = dir_ / "mapped.bin";
  write_llmc(path, counting(100 * 8 + 1));
  auto src = make_shard_source(spec(path));
  std::ifstream maps("/proc/self/maps");
  std::string line;
  bool mapped = false;
  while (std::getline(maps, line)) mapped |= line.find(path.string()) != std::string::npos;
  EXPECT_TRUE(mapped) << path << " is not in /proc/self/maps";
}

TEST_F(TokenShards, ReportNamesEachShardWithSizeAndContentHash) {
  auto tokens = counting(100 * 8 + 1);
  write_llmc(dir_ / "a_0.bin", tokens);
  write_llmc(dir_ / "a_1.bin", tokens);
  tokens[3] = 4;
  write_llmc(dir_ / "b.bin", tokens);
  const auto d = make_shard_source(spec(dir_ / "a_*.bin"))->describe();
  ASSERT_EQ(d.shards->size(), 2u);
  EXPECT_EQ(d.kind, "token_shards");
  EXPECT_EQ(d.shards->at(0).size_bytes, int64_t(fs::file_size(dir_ / "a_0.bin")));
  EXPECT_EQ(d.shards->at(0).size_bytes, 1024 + 2 * (100 * 8 + 1));
  EXPECT_EQ(d.tokens_total, 2 * (100 * 8 + 1));
  const std::string h0 = d.shards->at(0).content_hash, h1 = d.shards->at(1).content_hash;
  EXPECT_EQ(h0.rfind("sha1:", 0), 0u);
  EXPECT_EQ(h0.size(), 5u + 40u);
  EXPECT_EQ(h0, h1) << "same bytes, same hash";
  const std::string hb = make_shard_source(spec(dir_ / "b.bin"))->describe().shards->at(0).content_hash;
  EXPECT_NE(h0, hb) << "one token changed";
  // The digest is SHA-1 of head + tail + decimal size: pin it on a known input.
  const std::string abc = "abc";
  // sha1("abc" + "abc" + "3") from any SHA-1 tool (python: hashlib.sha1(b"abcabc3")).
  EXPECT_EQ(shard_content_hash(reinterpret_cast<const uint8_t*>(abc.data()), 3),
            "sha1:" + std::string("e0d76bd610e533def2f15846bcda230e872d3e24"));
}

TEST_F(TokenShards, BadIdMissedByTheOpenTimeSampleIsCaughtInItsBatch) {
  // 200,000 tokens: the open-time sample covers the first 65,536 and 16
  // windows of 4,096; every other token is out of range.
  const int64_t n = 200000, V = 1000;
  auto tokens = pattern_tokens(n, V);
  std::vector<bool> sampled(size_t(n), false);
  for (int64_t i = 0; i < 65536; ++i) sampled[size_t(i)] = true;
  for (int64_t w = 0; w < 16; ++w)
    for (int64_t i = 0; i < 4096; ++i) sampled[size_t((n - 4096) * w / 15 + i)] = true;
  for (int64_t i = 0; i < n; ++i)
    if (!sampled[size_t(i)]) tokens[size_t(i)] = uint16_t(V);
  write_llmc(dir_ / "late.bin", tokens);
  ShardSpec s = spec(dir_ / "late.bin", 4, 64);
  s.vocab = V;
  auto src = make_shard_source(s);  // the sample passes
  bool caught = false;
  for (int64_t step = 0; step < 20 && !caught; ++step) {
    try {
      src->batch(step, 0);
    } catch (const ConfigError& e) {
      caught = true;
      const std::string msg = e.what();
      EXPECT_NE(msg.find("late.bin"), std::string::npos) << msg;
      EXPECT_NE(msg.find("token id 1000 at byte offset"), std::string::npos) << msg;
      EXPECT_NE(msg.find("[0, 1000)"), std::string::npos) << msg;
    }
  }
  EXPECT_TRUE(caught);
}

TEST(ShardPattern, ExpandsInPathOrderAndRefusesNoMatch) {
  const fs::path dir = fs::temp_directory_path() / "ladder_shard_pattern";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* n : {"x_10.bin", "x_02.bin", "x_1.bin", "y.bin"}) std::ofstream(dir / n) << "z";
  const auto paths = expand_shard_pattern((dir / "x_*.bin").string());
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(fs::path(paths[0]).filename(), "x_02.bin");
  EXPECT_EQ(fs::path(paths[1]).filename(), "x_1.bin");
  EXPECT_EQ(fs::path(paths[2]).filename(), "x_10.bin");
  EXPECT_THROW(expand_shard_pattern((dir / "z_*.bin").string()), ConfigError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ladder
