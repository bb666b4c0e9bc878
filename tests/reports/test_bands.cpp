// tests/reports/test_bands.cpp: band tables (reports/render/sections/band_tables.h): which bands show and in
// what order, the sums and differences, the verdict line, and which reports
// give a source.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/render/sections/band_tables.h"

namespace ladder {
namespace {

using nlohmann::json;

std::vector<std::string> column(const Table& t, size_t c) {
  std::vector<std::string> out;
  for (const auto& r : t.rows) out.push_back(c < r.cells.size() ? r.cells[c].text : "?");
  return out;
}

const std::vector<BandSource> kTwo = {
    {"ladder top", {{"gemm", 22.24}, {"attention", 4.53}, {"idle_other", 1.37}, {"communication", 0.0},
                    {"elementwise_norm", 6.0}},
     39.07},
    {"peer compile", {{"gemm", 16.53}, {"attention", 4.54}, {"idle_other", 6.29}, {"communication", 0.0},
                      {"elementwise_norm", 6.88}, {"new_band", 0.5}},
     std::nullopt}};

TEST(Bands, ChartOrderZeroBandsOutNewOnesBeforeIdleThenSumAndDt) {
  const Table t = band_table("t", kTwo, {{0, 1}});
  EXPECT_EQ(column(t, 0), (std::vector<std::string>{"GEMM", "attention", "elementwise/norm", "new_band", "idle/other",
                                                    "sum", "step dt (median)"}));
  EXPECT_EQ(column(t, 1), (std::vector<std::string>{"22.24", "4.53", "6.00", "0.00", "1.37", "34.14", "39.07"}));
  EXPECT_EQ(column(t, 2), (std::vector<std::string>{"16.53", "4.54", "6.88", "0.50", "6.29", "34.74", "-"}));
  // ladder - peer; -0.01 is a loss for the peer's side, 0.00 never signed, no dt difference without both.
  EXPECT_EQ(column(t, 3), (std::vector<std::string>{"+5.71", "-0.01", "-0.88", "-0.50", "-4.92", "-0.60", "-"}));
  EXPECT_EQ(t.columns[3].header, "top - compile");
  EXPECT_EQ(t.columns[3].key, "ladder_top_minus_peer_compile_ms");
  EXPECT_EQ(t.rows[0].cells[3].tone, Tone::kBad);
  EXPECT_EQ(t.rows[1].cells[3].tone, Tone::kGood);
}

TEST(Bands, VerdictNamesTheLargestGapLeavingIdleOut) {
  EXPECT_EQ(band_verdict(kTwo, 0, 1).full(),
            "top against compile: largest gap GEMM +5.71 ms per step (sum 34.14 vs 34.74 ms)");
  EXPECT_EQ(band_verdict(kTwo, 1, 0).full(),
            "compile against top: largest gap elementwise/norm +0.88 ms per step (sum 34.74 vs 34.14 ms)");
  // Ahead in every band but idle/other (which does not count): the closest is named.
  const std::vector<BandSource> ahead = {{"A", {{"gemm", 1.0}, {"attention", 1.0}, {"idle_other", 9.0}}, std::nullopt},
                                         {"B", {{"gemm", 2.0}, {"attention", 1.5}, {"idle_other", 0.0}}, std::nullopt}};
  EXPECT_EQ(band_verdict(ahead, 0, 1).full(),
            "A against B: no band slower; closest attention -0.50 ms per step (sum 11.00 vs 3.50 ms)");
  EXPECT_EQ(band_verdict(ahead, 0, 1).tone, Tone::kGood);
}

TEST(Bands, SourceOnlyFromAValidAvailableBreakdown) {
  std::string why;
  auto with = [](const profiler::OpBreakdownSection& b) {
    RungReport r;
    r.status = "ok";
    r.op_breakdown = std::optional<profiler::OpBreakdownSection>(b);
    StepSummary summary;
    summary.metrics["dt_ms"] = summarize({2.5});
    r.summary = summary;
    return r;
  };
  profiler::OpBreakdownSection valid;
  valid.valid = true;
  valid.categories_ms = profiler::PerCategory<double>{};
  (*valid.categories_ms)[profiler::Category::kGemm] = 1.0;
  const auto s = band_source(with(valid), "A", &why);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->dt_ms, std::optional<double>(2.5));
  EXPECT_EQ(s->categories_ms.at("gemm"), 1.0);
  RungReport none;
  EXPECT_FALSE(band_source(none, "A", &why));
  EXPECT_EQ(why, "A: no op_breakdown");
  EXPECT_FALSE(band_source(with(profiler::OpBreakdownSection::unavailable_from("cupti", "CUPTI 999")), "B", &why));
  EXPECT_EQ(why, "B: op_breakdown unavailable: CUPTI 999");
  profiler::OpBreakdownSection invalid = valid;
  invalid.valid = false;
  invalid.invalid_reason = std::optional<std::string>("dropped records");
  EXPECT_FALSE(band_source(with(invalid), "C", &why));
  EXPECT_EQ(why, "C: no valid op_breakdown (dropped records)");
}

// Several processes of one cell: each band the median over those that have
// it (a band one breakdown lacks comes from the others), dt the median of
// theirs; the count is kept for the table's title.
TEST(Bands, MedianOverProcessesBandByBand) {
  const std::vector<BandSource> processes = {
      {"ladder top", {{"gemm", 724.0}, {"loss", 6.5}}, 940.0},
      {"ladder top", {{"gemm", 751.0}, {"loss", 7.0}, {"idle_other", 3.0}}, 950.0},
      {"ladder top", {{"gemm", 700.0}, {"loss", 6.0}, {"idle_other", 5.0}}, std::nullopt}};
  const BandSource m = median_band_source("ladder top", processes);
  EXPECT_EQ(m.label, "ladder top");
  EXPECT_EQ(m.processes, 3);
  EXPECT_DOUBLE_EQ(m.categories_ms.at("gemm"), 724.0);
  EXPECT_DOUBLE_EQ(m.categories_ms.at("loss"), 6.5);
  EXPECT_DOUBLE_EQ(m.categories_ms.at("idle_other"), 4.0);
  EXPECT_DOUBLE_EQ(m.dt_ms.value(), 945.0);
  EXPECT_FALSE(median_band_source("one", {{"one", {{"gemm", 1.0}}, std::nullopt}}).dt_ms.has_value());
}

}  // namespace
}  // namespace ladder
