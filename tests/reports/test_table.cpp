// tests/reports/test_table.cpp: the warnings under `ladder run`'s table
// (reports/render/documents/run_document.h), from summary rows built here: which rows ran on a busy
// machine (their noise verdict), and which 'p' MFU figures exceed the run's
// roofline.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/render/documents/run_document.h"

namespace ladder {
namespace {

using nlohmann::json;

json ok_row(const std::string& cell, double steps_cv, json processes_cv, double mfu_p) {
  return {{"cell", cell},
          {"rung", cell},
          {"status", "ok"},
          {"dt_ms_median", 100.0},
          {"tokens_per_s_median", 1000.0},
          {"speedup_vs_fp32", 1.0},
          {"speedup_vs_previous", nullptr},
          {"mfu_pct_datasheet", nullptr},
          {"mfu_pct_measured_roofline", mfu_p},
          {"mfu_pct", mfu_p},
          {"markers", {{"mfu_pct", "p"}}},
          {"peak_bytes", 1 << 30},
          {"op_counts", nullptr},
          {"parity", {{"status", "baseline"}}},
          {"noise",
           {{"quiet", steps_cv <= 0.05 && (processes_cv.is_null() || processes_cv.get<double>() <= 0.05)},
            {"cv_limit", 0.05},
            {"steps_cv", steps_cv},
            {"processes_cv", processes_cv}}}};
}

std::string table_of(const json& rows) {
  const json summary = {{"rows", rows}, {"repeats", 3}, {"missing", json::array()}};
  ::testing::internal::CaptureStdout();
  print_summary_table(summary, "summary.json");
  return ::testing::internal::GetCapturedStdout();
}

TEST(Table, NamesTheRowsThatRanOnABusyMachine) {
  const std::string out = table_of({ok_row("fp32", 0.021, 0.010, 60), ok_row("bf16", 0.083, 0.012, 55),
                                    ok_row("fused", 0.030, 0.171, 58)});
  const auto line_start = out.find("noise:");
  ASSERT_NE(line_start, std::string::npos) << out;
  const std::string line = out.substr(line_start, out.find('\n', line_start) - line_start);
  EXPECT_NE(line.find("bf16 (steps 8.3 %, processes 1.2 %)"), std::string::npos) << line;
  EXPECT_NE(line.find("fused (steps 3.0 %, processes 17.1 %)"), std::string::npos) << line;
  EXPECT_EQ(line.find("fp32"), std::string::npos) << line;
  EXPECT_NE(line.find("5 % (CV)"), std::string::npos) << line;
  EXPECT_EQ(out.find("roofline:"), std::string::npos) << out;
}

// A process the test of cells left out: the noise line names it, its round,
// how much slower it ran and what its monitor saw; its ratios carry '*'.
TEST(Table, NamesTheDisturbedProcessAndMarksItsRatios) {
  json fp32 = ok_row("fp32", 0.01, 0.01, 60), bf16 = ok_row("bf16", 0.01, 0.01, 60);
  bf16["speedup_vs_fp32"] = 1.5;
  bf16["speedup_vs_fp32_interval"] = {1.4, 1.6};
  bf16["speedup_vs_fp32_against"] = "fp32";
  bf16["disturbed"] = {{{"round", 2}, {"slower_x", 3.7}, {"p_value", 0.0001}, {"causes", {"load 2.9 on 2 CPUs"}}}};
  const std::string out = table_of({fp32, bf16});
  EXPECT_NE(out.find("noise: bf16 round 2: 3.7x slower than its other rounds and the other cells predict (load 2.9 "
                     "on 2 CPUs; p 0.0001): left out of the ratios ('*')"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("1.50 [1.40, 1.60]*"), std::string::npos) << out;
  EXPECT_NE(out.find("the median of its per-round ratios"), std::string::npos) << out;
}

TEST(Table, QuietRunsPrintNoNoiseLine) {
  const std::string out = table_of({ok_row("fp32", 0.021, nullptr, 60), ok_row("bf16", 0.05, nullptr, 55)});
  EXPECT_EQ(out.find("noise:"), std::string::npos) << out;
}

TEST(Table, FlagsMfuAboveTheMeasuredRoofline) {
  const std::string out = table_of({ok_row("fp32", 0.02, nullptr, 118.0), ok_row("bf16", 0.02, nullptr, 99.9)});
  const auto line_start = out.find("roofline: 'p' MFU above 100 % in fp32:");
  ASSERT_NE(line_start, std::string::npos) << out;
  const std::string line = out.substr(line_start, out.find('\n', line_start) - line_start);
  EXPECT_EQ(line.find("bf16"), std::string::npos) << line;
}

// --repeat auto gives the rungs different numbers of processes: the
// figures line says the range, not one count.
TEST(Table, FiguresLineOfAnAutoRunGivesTheRangeOfProcesses) {
  json a = ok_row("fp32", 0.02, 0.01, 60), b = ok_row("bf16", 0.02, 0.01, 55);
  a["repeats"] = {{"count", 5}};
  b["repeats"] = {{"count", 2}};
  json summary = {{"rows", {a, b}}, {"repeats", 5}, {"missing", json::array()},
                  {"repeat_auto", {{"rounds", 5}, {"elapsed_s", 60.0}, {"target_ci_pct", 2.0}, {"time_budget_s", 120.0},
                                   {"stopped", "every ratio is within the target"}, {"unresolved", json::array()}}}};
  ::testing::internal::CaptureStdout();
  print_summary_table(summary, "summary.json");
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("figures: the median of each rung's per-process medians (2 to 5 processes, --repeat auto"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("the median of 5 per-process medians"), std::string::npos) << out;
}

}  // namespace
}  // namespace ladder
