// tests/test_ratios.cpp: the ratio kinds (reports/model/ratios.h): each declared
// once, against the cell it names, in the direction it names, and recorded in
// and read back from summary.json's rows unchanged.
#include <cmath>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/model/ratios.h"
#include "reports/model/summary_json.h"

namespace ladder {
namespace {

using nlohmann::json;

// An ok row of a one-shape run whose processes' tokens/s are `v`, rounds 1..n.
json row_of(const std::string& cell, const std::string& rung, std::vector<double> v, bool peer = false) {
  json rounds = json::array();
  for (size_t k = 0; k < v.size(); ++k) rounds.push_back(int(k) + 1);
  json row = {{"cell", cell}, {"rung", rung}, {"status", "ok"}, {"preset", "tiny"}, {"batch", 4}, {"seq", 64},
              {"tokens_per_s_median", v.front()}, {"per_process", {{"tokens_per_s_median", v}}}, {"rounds", rounds}};
  if (peer) row["peer"] = {{"name", cell.substr(5)}};
  return row;
}

TEST(RatioKinds, EachKeyIsDeclaredOnceWithALabelAndWhatItDivides) {
  std::set<std::string> keys;
  for (const RatioKind& k : ratio_kinds()) {
    EXPECT_TRUE(keys.insert(k.key).second) << k.key;
    EXPECT_GT(std::string(k.label).size(), 0u) << k.key;
    EXPECT_NE(std::string(k.divides).find(" over "), std::string::npos) << k.key;
  }
  EXPECT_THROW(ratio_kind("speedup_vs_nothing"), std::logic_error);
}

// Constant ratios between cells in every round: each kind's value is exact,
// and says which way it divides.
TEST(RatioKinds, EachDividesTheCellsItNamesTheWayItSays) {
  json rows = json::array({row_of("fp32", "fp32", {100, 100}), row_of("top", "top", {400, 400}),
                           row_of("top-fused", "top-fused", {320, 320}),
                           row_of("top+act-ckpt", "top+act-ckpt", {300, 300}),
                           row_of("fused-adamw", "fused-adamw", {380, 380}),
                           row_of("peer-compile", "fused-adamw", {400, 400}, /*peer=*/true)});
  add_ratios(rows);
  auto value = [&](size_t row, const char* key) { return rows[row][key].get<double>(); };
  EXPECT_DOUBLE_EQ(value(0, "speedup_vs_fp32"), 1.0);  // fp32 against itself
  EXPECT_TRUE(rows[0]["speedup_vs_fp32_against"].is_null());
  EXPECT_NEAR(value(1, "speedup_vs_fp32"), 4.0, 1e-12);
  EXPECT_EQ(rows[1]["speedup_vs_fp32_against"], "fp32");
  EXPECT_NEAR(value(2, "speedup_vs_previous"), 0.8, 1e-12);  // top-fused over top, the row above
  EXPECT_NEAR(value(2, "effect_at_top"), 1.25, 1e-12);        // top over top-fused: what fused buys
  EXPECT_NEAR(value(3, "effect_at_top"), 0.75, 1e-12);        // top+act-ckpt over top
  EXPECT_EQ(rows[3]["effect_at_top_against"], "top");
  EXPECT_FALSE(rows[1].contains("effect_at_top"));  // top itself has none
  // A peer: ladder's fused-adamw over the peer; no x prev, never the rung above another.
  EXPECT_NEAR(rows[5]["ladder_vs_peer"]["tokens_per_s_ratio"].get<double>(), 0.95, 1e-12);
  EXPECT_EQ(rows[5]["ladder_vs_peer"]["rung"], "fused-adamw");
  EXPECT_TRUE(rows[5]["speedup_vs_previous"].is_null());
  EXPECT_NEAR(value(5, "speedup_vs_fp32"), 4.0, 1e-12);
  // Two rounds of constant ratios: the block design leaves no noise, so the intervals are points.
  EXPECT_TRUE(rows[1]["speedup_vs_fp32_interval"].is_array()) << rows[1].dump();
}

// What add_ratios writes, read_summary_rows reads back: the run table of a
// recorded summary shows the recorded ratios, and computes only the missing.
TEST(RatioKinds, RecordedRatiosReadBackAndOnlyMissingOnesAreComputed) {
  json rows = json::array({row_of("fp32", "fp32", {100, 104, 98}), row_of("bf16", "bf16", {150, 149, 160})});
  add_ratios(rows);
  std::vector<SummaryRow> typed = read_summary_rows(rows);
  const RowRatio& r = typed[1].ratios.at("speedup_vs_fp32");
  EXPECT_DOUBLE_EQ(*r.value, rows[1]["speedup_vs_fp32"].get<double>());
  EXPECT_DOUBLE_EQ(r.interval->first, rows[1]["speedup_vs_fp32_interval"][0].get<double>());
  EXPECT_EQ(r.against, "fp32");
  // A recorded value is kept even where the samples say otherwise (the record is the record).
  rows[1]["speedup_vs_fp32"] = 9.0;
  rows[1].erase("speedup_vs_previous");
  typed = read_summary_rows(rows);
  compute_ratios(typed, /*only_missing=*/true);
  EXPECT_DOUBLE_EQ(*typed[1].ratios.at("speedup_vs_fp32").value, 9.0);
  EXPECT_NEAR(*typed[1].ratios.at("speedup_vs_previous").value, 1.5, 0.05);
}

// x compile: every rung against the same shape's torch.compile peer; none
// for the peers themselves, nor in a run without that peer.
TEST(RatioKinds, XCompileIsEachRungOverTheCompilePeer) {
  json rows = json::array({row_of("fp32", "fp32", {100, 102}), row_of("fused-adamw", "fused-adamw", {380, 387.6}),
                           row_of("peer-eager", "fused-adamw", {250, 255}, /*peer=*/true),
                           row_of("peer-compile", "fused-adamw", {400, 408}, /*peer=*/true)});
  add_ratios(rows);
  EXPECT_NEAR(rows[0]["speedup_vs_compile"].get<double>(), 0.25, 1e-12);
  EXPECT_NEAR(rows[1]["speedup_vs_compile"].get<double>(), 0.95, 1e-12);
  EXPECT_EQ(rows[1]["speedup_vs_compile_against"], "peer-compile");
  EXPECT_FALSE(rows[2].contains("speedup_vs_compile"));
  EXPECT_FALSE(rows[3].contains("speedup_vs_compile"));
  json without = json::array({row_of("fp32", "fp32", {100, 102}), row_of("bf16", "bf16", {150, 153})});
  add_ratios(without);
  EXPECT_FALSE(without[1].contains("speedup_vs_compile"));
}

TEST(RatioKinds, PairingByRoundKeepsTheRoundsBothSidesRanAndSkipsMissingValues) {
  const ProcessSamples a{{100, 110, NAN, 90}, {1, 2, 3, 4}};
  const ProcessSamples b{{95, 104, 99, 85}, {1, 2, 3, 5}};
  const RoundPairs p = paired_by_round(a, b);
  EXPECT_EQ(p.a, (std::vector<double>{100, 110}));
  EXPECT_EQ(p.b, (std::vector<double>{95, 104}));
}

}  // namespace
}  // namespace ladder
