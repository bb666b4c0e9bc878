// tests/bench/test_data_cli.cpp: `--data` as a user runs it. Each bad shard exits
// with code 2 before anything runs, with a message that names the file, the
// byte offset or header field, the value and what was expected, and writes
// no report; a good shard runs and its report names the shards.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_ladder.h"
#include "tests/support/shard_files.h"

namespace {

namespace fs = std::filesystem;
using ladder::test::LlmcHeader;
using ladder::test::pattern_tokens;
using ladder::test::Result;
using ladder::test::run_ladder;
using ladder::test::write_llmc;
using ladder::test::write_raw;

// tiny: B4 T64, so one batch needs 4 * 64 + 1 = 257 tokens; V = 1000.
constexpr int64_t kTokens = 64 * 20 + 1;

class DataCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ladder_data_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `ladder run` on the tiny preset with this data: exit 2, every part in
  // the message, no report. Then the same through `ladder measure`.
  void expect_bad_data(const std::string& data_args, std::initializer_list<std::string> parts) {
    for (const char* cmd : {"run --device cpu --rungs fp32", "measure --device cpu --rung fp32"}) {
      const fs::path out = dir_ / "out";
      const Result r = run_ladder(std::string(cmd) + " --preset tiny --steps 1 --warmup 0 --threads 1 --out " +
                                  out.string() + " " + data_args);
      EXPECT_EQ(r.exit_code, 2) << cmd << " " << data_args << "\n" << r.output;
      for (const auto& part : parts)
        EXPECT_NE(r.output.find(part), std::string::npos) << cmd << ": missing '" << part << "' in: " << r.output;
      EXPECT_FALSE(fs::exists(out / "fp32" / "report.json")) << cmd;
    }
  }

  std::string shard(const char* name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(DataCli, WrongMagic) {
  write_raw(shard("raw.bin"), pattern_tokens(kTokens, 1000));  // no header
  expect_bad_data("--data " + shard("raw.bin"),
                  {shard("raw.bin"), "byte offset 0", "magic", "expected 20240520", "--data-format raw-u16"});
}

TEST_F(DataCli, WrongVersion) {
  LlmcHeader h;
  h.version = 2;
  write_llmc(shard("v2.bin"), pattern_tokens(kTokens, 1000), h);
  expect_bad_data("--data " + shard("v2.bin"), {shard("v2.bin"), "byte offset 4", "version", "got 2", "expected 1"});
}

TEST_F(DataCli, TokenCountDisagreesWithFileSize) {
  LlmcHeader h;
  h.count = kTokens - 10;  // the file holds 10 more tokens than the header says
  write_llmc(shard("count.bin"), pattern_tokens(kTokens, 1000), h);
  const std::string expected_size = std::to_string(1024 + 2 * (kTokens - 10));
  expect_bad_data("--data " + shard("count.bin"),
                  {shard("count.bin"), "byte offset 8", std::to_string(kTokens - 10), "disagrees with the file size",
                   "expected a file of " + expected_size + " bytes"});
}

TEST_F(DataCli, TruncatedFile) {
  write_llmc(shard("cut.bin"), pattern_tokens(kTokens, 1000));
  fs::resize_file(shard("cut.bin"), 1024 + 2 * kTokens - 100);  // a download cut short
  expect_bad_data("--data " + shard("cut.bin"),
                  {shard("cut.bin"), "truncated", "byte offset 8", std::to_string(1024 + 2 * kTokens) + " bytes",
                   "100 bytes missing"});
  write_raw(shard("odd.bin"), pattern_tokens(kTokens, 1000));
  fs::resize_file(shard("odd.bin"), 2 * kTokens - 1);  // half a token at the end
  expect_bad_data("--data-format raw-u16 --data " + shard("odd.bin"),
                  {shard("odd.bin"), "truncated", "byte offset " + std::to_string(2 * kTokens - 2),
                   "expected an even size"});
}

TEST_F(DataCli, TokenIdAtLeastTheVocabSize) {
  auto tokens = pattern_tokens(kTokens, 1000);
  tokens[5] = 1000;  // tiny's V is 1000
  write_llmc(shard("vocab.bin"), tokens);
  expect_bad_data("--data " + shard("vocab.bin"),
                  {shard("vocab.bin"), "token id 1000", "byte offset 1034", "token 5", "expected ids in [0, 1000)"});
}

TEST_F(DataCli, EmptyGlob) {
  const std::string glob = (dir_ / "fineweb_train_*.bin").string();
  expect_bad_data("--data '" + glob + "'", {"--data", glob, "matched no files"});
}

TEST_F(DataCli, ShardShorterThanOneBatch) {
  write_llmc(shard("a_0.bin"), pattern_tokens(kTokens, 1000));
  write_llmc(shard("a_1.bin"), pattern_tokens(200, 1000));  // 257 needed
  expect_bad_data("--data '" + (dir_ / "a_*.bin").string() + "'",
                  {shard("a_1.bin"), "200 tokens", "shorter than one batch", "--batch 4 x --seq 64",
                   "expected at least 257 tokens"});
}

TEST_F(DataCli, RawFormatOnAnLlmcFileAndUnknownFormats) {
  write_llmc(shard("h.bin"), pattern_tokens(kTokens, 1000));
  expect_bad_data("--data-format raw-u16 --data " + shard("h.bin"),
                  {shard("h.bin"), "byte offset 0", "llm.c magic", "drop --data-format"});
  expect_bad_data("--data-format u32 --data " + shard("h.bin"), {"--data-format", "'u32'", "auto", "raw-u16"});
  expect_bad_data("--data-format raw-u16", {"--data-format raw-u16", "needs --data"});
}

TEST_F(DataCli, BadIdFoundMidRunStillExitsTwo) {
  // The open-time sample (first 65,536 tokens, 16 windows of 4,096) passes;
  // every other token is out of range, so an early batch hits one.
  const int64_t n = 200000;
  auto tokens = pattern_tokens(n, 1000);
  for (int64_t i = 65536; i < n; ++i) {
    bool sampled = false;
    for (int64_t w = 0; w < 16; ++w) sampled |= i >= (n - 4096) * w / 15 && i < (n - 4096) * w / 15 + 4096;
    if (!sampled) tokens[size_t(i)] = 1000;
  }
  write_llmc(shard("late.bin"), tokens);
  const fs::path out = dir_ / "out";
  const Result r = run_ladder("measure --device cpu --rung fp32 --preset tiny --steps 10 --warmup 0 --threads 1 --no-op-count --out " +
                              out.string() + " --data " + shard("late.bin"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(shard("late.bin") + ": token id 1000 at byte offset"), std::string::npos) << r.output;
}

TEST_F(DataCli, GoodShardRunsAndTheReportNamesIt) {
  write_llmc(shard("good.bin"), pattern_tokens(kTokens, 1000));
  const fs::path out = dir_ / "out";
  const Result r = run_ladder("run --device cpu --rungs fp32 --preset tiny --steps 2 --warmup 1 --threads 1 --quiet --out " +
                              out.string() + " --data " + shard("good.bin"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream f(out / "fp32" / "report.json");
  const auto report = nlohmann::json::parse(f);
  EXPECT_EQ(report["config"]["data"]["path"], shard("good.bin"));
  EXPECT_EQ(report["data"]["kind"], "token_shards");
  EXPECT_EQ(report["data"]["shards"][0]["path"], shard("good.bin"));
  EXPECT_EQ(report["data"]["shards"][0]["size_bytes"], 1024 + 2 * kTokens);
  EXPECT_EQ(report["steps"]["data_ms"].size(), 2u);
  // warmup + measured steps, 4 x 64 tokens each; the op breakdown's extra
  // steps (one on CPU, two on CUDA) come after the count.
  EXPECT_EQ(report["data"]["tokens_consumed"], (1 + 2) * 4 * 64);
}

}  // namespace
