// tests/bench/test_cli.cpp: `ladder` as a user runs it. Every bad input exits with
// code 2, names the option, the value and what is allowed, and writes no
// report; a good run writes one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "tests/support/run_ladder.h"

namespace {

namespace fs = std::filesystem;

using ladder::test::Result;
using ladder::test::run_ladder;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ladder_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs with a fresh --out and asserts exit 2, the message parts, no report.
  void expect_bad_input(const std::string& args, std::initializer_list<const char*> parts) {
    const fs::path out = dir_ / "run";
    const Result r = run_ladder("run --device cpu --rungs fp32 --out " + out.string() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    for (const char* part : parts) EXPECT_NE(r.output.find(part), std::string::npos) << "missing '" << part << "' in: " << r.output;
    EXPECT_FALSE(fs::exists(out / "fp32" / "report.json")) << args;
  }

  fs::path dir_;
};

TEST_F(Cli, UnknownPresetListsTheKnownOnes) {
  expect_bad_input("--preset gpt9", {"--preset", "'gpt9'", "gpt2-124m", "tiny"});
}

TEST_F(Cli, UnknownSubcommand) {
  const Result r = run_ladder("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown command 'frobnicate'"), std::string::npos) << r.output;
}

TEST_F(Cli, UnknownSwitchInARungNamesTheSwitches) {
  expect_bad_input("--preset tiny --rungs fp32+gelu", {"unknown switch 'gelu'", "gelu-epilogue", "fused-ln"});
}

TEST_F(Cli, BadFormatNamesTheFormatsOfARun) {
  expect_bad_input("--preset tiny --format yaml", {"--format", "'yaml'", "text, csv, gbench, html, json, markdown"});
}

TEST_F(Cli, UnknownOption) { expect_bad_input("--preset tiny --batchsize 3", {"unknown option '--batchsize'"}); }

TEST_F(Cli, NonPositiveBatchAndSeq) {
  expect_bad_input("--preset tiny --batch 0", {"--batch", "got 0", "> 0"});
  expect_bad_input("--preset tiny --batch -3", {"--batch", "got -3", "> 0"});
  expect_bad_input("--preset tiny --seq 0", {"--seq", "got 0", "> 0"});
}

TEST_F(Cli, SeqLargerThanBlockSize) {
  expect_bad_input("--preset tiny --seq 65", {"--seq", "65", "block size 64", "<= 64"});
}

TEST_F(Cli, EmbdNotDivisibleByHeads) {
  expect_bad_input("--preset tiny --n-embd 65", {"--n-embd", "65", "--n-head 2"});
}

TEST_F(Cli, CudaOnAMachineWithoutCuda) {
  expect_bad_input("--preset tiny --device tpu", {"--device", "'tpu'", "cpu, cuda or cuda:N"});
  if (torch::cuda::is_available()) GTEST_SKIP() << "a CUDA device is present: --device cuda is valid";
  expect_bad_input("--preset tiny --device cuda", {"--device cuda", "CUDA", "--device cpu"});
}

TEST_F(Cli, UnwritableOut) {
  const fs::path file = dir_ / "a_file";
  std::ofstream(file) << "x";
  const Result r = run_ladder("run --device cpu --rungs fp32 --preset tiny --steps 1 --warmup 0 --out " + (file / "sub").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--out"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("a_file/sub"), std::string::npos) << r.output;
}

TEST_F(Cli, StepsBelowOne) { expect_bad_input("--preset tiny --steps 0", {"--steps", "got 0", "> 0"}); }

TEST_F(Cli, MalformedNumber) {
  expect_bad_input("--preset tiny --batch 4x", {"--batch", "'4x'", "not an integer"});
  expect_bad_input("--preset tiny --lr 1e-3q", {"--lr", "'1e-3q'", "not a number"});
  expect_bad_input("--preset tiny --steps", {"--steps", "missing value"});
}

TEST_F(Cli, HelpExitsZeroAndListsOptions) {
  const Result r = run_ladder("run --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt : {"--device", "--preset", "--batch", "--seq", "--steps", "--warmup", "--seed", "--out", "--threads"})
    EXPECT_NE(r.output.find(opt), std::string::npos) << opt;
}

TEST_F(Cli, GoodRunWritesACompleteReportPerProcess) {
  const fs::path out = dir_ / "run";
  const Result r = run_ladder("run --device cpu --rungs fp32 --preset tiny --steps 2 --warmup 1 --threads 1 --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(out / "fp32" / "report.json"));
  // Nothing half-written is left behind.
  for (const auto& e : fs::recursive_directory_iterator(out))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  EXPECT_TRUE(fs::exists(out / "summary.json"));
  EXPECT_TRUE(fs::exists(out / "matrix.json"));
  EXPECT_NE(r.output.find("summary: "), std::string::npos);
  // What the report says: the run asked for, its figures consistent.
  const auto report = nlohmann::json::parse(std::ifstream(out / "fp32" / "report.json"));
  EXPECT_EQ(report["status"], "ok");
  EXPECT_EQ(report["rung"], "fp32");
  EXPECT_EQ(report["config"]["preset"], "tiny");
  EXPECT_EQ(report["config"]["steps"], 2);
  const auto dt = report["steps"]["dt_ms"].get<std::vector<double>>();
  ASSERT_EQ(dt.size(), 2u);
  EXPECT_EQ(report["warmup_steps"]["dt_ms"].size(), 1u);  // --warmup 1: exactly one
  const auto tok = report["steps"]["tokens_per_s"].get<std::vector<double>>();
  for (size_t i = 0; i < dt.size(); ++i) {
    EXPECT_GT(dt[i], 0.0);
    EXPECT_NEAR(tok[i], 4 * 64 / (dt[i] * 1e-3), 1e-6 * tok[i]);  // tokens per step / dt
  }
  EXPECT_DOUBLE_EQ(report["summary"]["dt_ms"]["median"].get<double>(), (dt[0] + dt[1]) / 2);
  for (const auto& loss : report["steps"]["loss"]) EXPECT_NEAR(loss.get<double>(), std::log(1000.0), 0.5);
  EXPECT_EQ(report["parity"]["status"], "baseline");
  EXPECT_EQ(report["throughput"]["tokens_per_step"], 4 * 64);
  EXPECT_GT(report["memory"]["measured"]["peak_bytes"].get<int64_t>(), 0);
  // Two processes by default, in two rounds: the row's dt is the median of
  // their medians, and the plan names both jobs.
  const auto second = nlohmann::json::parse(std::ifstream(out / "fp32" / "repeat2" / "report.json"));
  EXPECT_EQ(second["status"], "ok");
  const auto summary = nlohmann::json::parse(std::ifstream(out / "summary.json"));
  EXPECT_EQ(summary["status"], "complete");
  EXPECT_EQ(summary["repeats"], 2);
  EXPECT_EQ(summary["rows"][0]["rounds"], nlohmann::json({1, 2}));
  EXPECT_DOUBLE_EQ(summary["rows"][0]["dt_ms_median"].get<double>(),
                   (report["summary"]["dt_ms"]["median"].get<double>() + second["summary"]["dt_ms"]["median"].get<double>()) / 2);
  const auto plan = nlohmann::json::parse(std::ifstream(out / "plan.json"));
  EXPECT_EQ(plan["jobs"].size(), 2u);
}

TEST_F(Cli, NonFiniteNumbersAreRejected) {
  // strtod reads these; no option means them.
  expect_bad_input("--preset tiny --min-lr-ratio nan", {"--min-lr-ratio", "'nan'", "not a finite number"});
  expect_bad_input("--preset tiny --weight-decay nan", {"--weight-decay", "'nan'", "not a finite number"});
  expect_bad_input("--preset tiny --bucket-cap-mb inf", {"--bucket-cap-mb", "'inf'", "not a finite number"});
  expect_bad_input("--preset tiny --lr -inf", {"--lr", "'-inf'", "not a finite number"});
}

TEST_F(Cli, ADivergedBaselineFailsTheRunNamingTheStep) {
  // A learning rate of 1e30 blows the weights up after the first update.
  const fs::path out = dir_ / "run";
  const Result r = run_ladder("run --device cpu --rungs fp32 --preset tiny --steps 3 --warmup 0 --threads 1 "
                              "--lr 1e30 --lr-warmup 0 --out " + out.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::ifstream f(out / "fp32" / "report.json");
  ASSERT_TRUE(bool(f)) << r.output;
  const auto report = nlohmann::json::parse(f);
  EXPECT_EQ(report["status"], "diverged") << report.dump(2);
  EXPECT_EQ(report["failure"]["reason"], "diverged");
  EXPECT_GE(report["failure"]["step"].get<int>(), 1);
  EXPECT_NE(report["failure"]["message"].get<std::string>().find("diverged at step"), std::string::npos);
  std::ifstream sf(out / "summary.json");
  const auto summary = nlohmann::json::parse(sf);
  EXPECT_EQ(summary["rows"][0]["status"], "diverged");
}

TEST_F(Cli, WarmupRunsUntilStableOrItsCapAndAFixedWarmupIsExact) {
  const fs::path out = dir_ / "m";
  Result r = run_ladder("measure --device cpu --rung fp32 --preset tiny --steps 2 --warmup-max 8 --threads 1 "
                        "--no-op-count --quiet --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto report = nlohmann::json::parse(std::ifstream(out / "fp32" / "report.json"));
  const auto& w = report["timing"]["warmup"];
  const int64_t run = w["steps_run"].get<int64_t>();
  EXPECT_GE(run, 2);
  EXPECT_LE(run, 8);
  EXPECT_EQ(report["warmup_steps"]["dt_ms"].size(), size_t(run));
  EXPECT_EQ(report["steps"]["step"][0].get<int64_t>(), run);  // measurement starts right after
  const auto dts = report["warmup_steps"]["dt_ms"].get<std::vector<double>>();
  if (w["stopped"] == "stable") {
    const double lo = std::min({dts[run - 1], dts[run - 2], dts[run - 3]});
    const double hi = std::max({dts[run - 1], dts[run - 2], dts[run - 3]});
    EXPECT_LE((hi - lo) / lo * 100.0, w["tolerance_pct"].get<double>());
  } else {
    EXPECT_EQ(w["stopped"], "cap");
    EXPECT_EQ(run, 8);
  }
  // --warmup N alone: exactly N.
  const fs::path fixed = dir_ / "f";
  r = run_ladder("measure --device cpu --rung fp32 --preset tiny --steps 2 --warmup 3 --threads 1 --no-op-count "
                 "--quiet --out " + fixed.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  report = nlohmann::json::parse(std::ifstream(fixed / "fp32" / "report.json"));
  EXPECT_EQ(report["timing"]["warmup"]["stopped"], "fixed");
  EXPECT_EQ(report["warmup_steps"]["dt_ms"].size(), 3u);
  expect_bad_input("--preset tiny --warmup 5 --warmup-max 3", {"--warmup-max", "got 3", ">= the minimum warmup 5"});
}

}  // namespace
