// tests/reports/test_ratios.cpp: the ratio kinds (reports/model/run/ratios.h): each declared
// once, against the cell it names, in the direction it names, and recorded in
// and read back from summary.json's rows unchanged.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/model/run/ratios.h"
#include "reports/model/run/summary_json.h"

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

namespace ladder {
namespace {

// The run of issue 69: peer:eager's round 1 ran 3.7x slow while another
// program loaded the machine. The test of cells (reports/stats/block_design.h)
// names it in the row, with what its monitor saw, and leaves it out of every
// ratio: the peers' ratios are the clean rounds' medians, and the pair of
// clean cells keeps a narrow interval.
TEST(RatioKinds, ADisturbedProcessIsNamedAndLeftOutOfEveryRatio) {
  json rows = json::array({row_of("fused-adamw", "fused-adamw", {559.5, 545.9, 545.0}),
                           row_of("peer-compile", "fused-adamw", {464.1, 475.9, 459.4}, /*peer=*/true),
                           row_of("peer-eager", "fused-adamw", {118.4, 444.4, 419.1}, /*peer=*/true)});
  rows[2]["noise"] = {{"quiet", false}, {"cv_limit", 0.05}, {"steps_cv", 0.01},
                      {"per_process_causes", {{"load 2.9 on 2 CPUs"}, json::array(), json::array()}}};
  add_ratios(rows);
  ASSERT_TRUE(rows[2]["disturbed"].is_array()) << rows[2].dump();
  ASSERT_EQ(rows[2]["disturbed"].size(), 1u);
  EXPECT_EQ(rows[2]["disturbed"][0]["round"], 1);
  EXPECT_NEAR(rows[2]["disturbed"][0]["slower_x"].get<double>(), 3.68, 0.01);
  EXPECT_EQ(rows[2]["disturbed"][0]["causes"], json({"load 2.9 on 2 CPUs"}));
  EXPECT_FALSE(rows[0].contains("disturbed"));
  EXPECT_NEAR(rows[1]["ladder_vs_peer"]["tokens_per_s_ratio"].get<double>(), 1.18633, 1e-5);
  EXPECT_NEAR(rows[1]["ladder_vs_peer"]["tokens_per_s_interval"][0].get<double>(), 1.12015, 1e-5);
  EXPECT_NEAR(rows[1]["ladder_vs_peer"]["tokens_per_s_interval"][1].get<double>(), 1.24180, 1e-5);
  EXPECT_NEAR(rows[2]["ladder_vs_peer"]["tokens_per_s_ratio"].get<double>(), 1.26389, 1e-5);
  EXPECT_NEAR(rows[0]["speedup_vs_compile"].get<double>(), 1.18633, 1e-5);

  // Read back: the disturbed process, and which ratios lost a process ('*').
  std::vector<SummaryRow> typed = read_summary_rows(rows);
  compute_ratios(typed, /*only_missing=*/true);
  ASSERT_EQ(typed[2].disturbed.size(), 1u);
  EXPECT_EQ(typed[2].disturbed[0].round, 1);
  EXPECT_EQ(typed[2].ratios.at("ladder_vs_peer").left_out, 1);
  EXPECT_EQ(typed[1].ratios.at("ladder_vs_peer").left_out, 0);
  EXPECT_EQ(typed[0].ratios.at("speedup_vs_compile").left_out, 0);
}

// --ab: b_over_a pairs side B's process with side A's of each round, and a
// round where either was disturbed leaves the pairs.
TEST(RatioKinds, BOverALeavesOutTheRoundOfADisturbedProcess) {
  auto sided = [](json row, const char* side) {
    row["side"] = side;
    row["cell"] = std::string(side) + "/" + row["cell"].get<std::string>();
    return row;
  };
  json rows = json::array({sided(row_of("fp32", "fp32", {100, 102, 101}), "A"),
                           sided(row_of("bf16", "bf16", {150, 151, 149}), "A"),
                           sided(row_of("flash", "flash", {200, 203, 199}), "A"),
                           sided(row_of("fp32", "fp32", {95, 97, 96}), "B"),
                           sided(row_of("bf16", "bf16", {142.5, 143.4, 35}), "B"),
                           sided(row_of("flash", "flash", {190, 193, 189}), "B")});
  add_ratios(rows);
  ASSERT_TRUE(rows[4]["disturbed"].is_array()) << rows[4].dump();
  EXPECT_EQ(rows[4]["disturbed"][0]["round"], 3);
  EXPECT_NEAR(rows[4]["b_over_a"].get<double>(), std::sqrt(142.5 / 150 * 143.4 / 151), 1e-12);
  EXPECT_NEAR(rows[3]["b_over_a"].get<double>(), 96.0 / 101, 1e-12);  // the median of 0.95, 0.951, 0.9505
}

}  // namespace
}  // namespace ladder

namespace ladder {
namespace {

// What a ratio's interval says: above 1, below 1, within the noise
// threshold, or unresolved (the run table's '?').
std::string verdict_of(const RowRatio& r) {
  const RatioInterval i = r.as_interval();
  if (!i.has_interval()) return "no interval";
  if (i.excludes_one()) return i.lo > 1 ? "above 1" : "below 1";
  return i.within(kRatioNoisePct) ? "within noise" : "unresolved";
}

// Issue 69's acceptance: every recorded run (reports/results), its ratios
// made again by today's statistics, keeps the verdict it recorded, except
// where a process of its shape is now found disturbed; those are printed
// ("disturbed:", for the note), and so is every ratio whose verdict moved.
TEST(RatioKinds, RecordedRunsKeepTheirVerdictsButWhereAProcessIsDisturbed) {
  namespace fs = std::filesystem;
  size_t summaries = 0, ratios = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(LADDER_SOURCE_DIR) / "reports" / "results")) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.size() < 12 || name.substr(name.size() - 12) != "summary.json") continue;
    std::ifstream in(e.path());
    const json summary = json::parse(in);
    if (summary.value("kind", "") != "ladder.run_summary") continue;
    ++summaries;
    const std::vector<SummaryRow> recorded = read_summary_rows(summary["rows"]);
    std::vector<SummaryRow> fresh = recorded;
    for (auto& row : fresh) row.ratios.clear();
    compute_ratios(fresh);
    std::set<std::string> disturbed_shapes;
    for (const auto& row : fresh)
      for (const auto& d : row.disturbed) {
        disturbed_shapes.insert(row.shape());
        std::cout << "disturbed: " << fs::relative(e.path(), LADDER_SOURCE_DIR).string() << " " << row.cell
                  << " round " << d.round << " " << d.slower_x << "x p " << d.p_value << "\n";
      }
    for (size_t i = 0; i < recorded.size(); ++i)
      for (const auto& [key, was] : recorded[i].ratios) {
        const auto now = fresh[i].ratios.find(key);
        // Only a ratio of the same definition: x prev's composite rule (RUNG+SWITCH
        // against RUNG, 2026-11-26) moved some rows' reference since they were recorded.
        if (!was.interval || now == fresh[i].ratios.end() || now->second.against != was.against) continue;
        ++ratios;
        if (verdict_of(was) == verdict_of(now->second)) continue;
        std::cout << "moved: " << e.path().filename().string() << " " << recorded[i].cell << " " << key << " "
                  << verdict_of(was) << " -> " << verdict_of(now->second) << "\n";
        EXPECT_TRUE(disturbed_shapes.count(recorded[i].shape()))
            << e.path() << ": " << recorded[i].cell << " " << key << " was " << verdict_of(was) << ", now "
            << verdict_of(now->second) << ", and no process of its shape is disturbed";
      }
  }
  EXPECT_GE(summaries, 40u);  // 52 recorded on 2026-12-02
  EXPECT_GE(ratios, 100u);
}

}  // namespace
}  // namespace ladder
