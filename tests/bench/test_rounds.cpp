// tests/bench/test_rounds.cpp: a run's rounds (bench/run/rounds.h): the first rounds
// interleave every cell (and A/B sides, A B then B A); --repeat auto's next
// round holds the cells whose ratios are still wider than the target and
// the cells they are against, and nothing else.
#include <algorithm>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/run/matrix.h"
#include "bench/run/rounds.h"
#include "reports/model/run/ratios.h"
#include "reports/model/run/summary_json.h"
#include "reports/render/documents/run_document.h"

namespace ladder {
namespace {

using nlohmann::json;

std::vector<Cell> tiny_cells(const std::vector<std::string>& rungs) {
  MatrixSpec spec;
  spec.device = "cpu";
  spec.presets = {"tiny"};
  spec.rungs = rungs;
  return build_cells(spec);
}

TEST(Rounds, FirstRoundsInterleaveEveryCellAndTheSides) {
  const auto cells = tiny_cells({"fp32", "flash", "grad-accum"});
  RunnerOptions o;
  o.repeats = 2;
  std::vector<std::string> order;
  for (const Job& j : first_rounds(cells, o)) order.push_back(job_name(j));
  // Round 1 has the parity reference; round 2 only the measured cells.
  EXPECT_EQ(order, (std::vector<std::string>{"fp32", "flash", "grad-accum.parity-single", "grad-accum", "fp32/repeat2",
                                             "flash/repeat2", "grad-accum/repeat2"}));
  o.sides = {"A", "B"};
  o.repeats = 2;
  std::vector<std::string> ab;
  const auto fp32 = tiny_cells({"fp32"});  // jobs point into the cells: keep them alive
  for (const Job& j : first_rounds(fp32, o)) ab.push_back(job_name(j));
  EXPECT_EQ(ab, (std::vector<std::string>{"A/fp32", "B/fp32", "B/fp32/repeat2", "A/fp32/repeat2"}));
}

// Rows of a ladder run whose processes' tokens/s are given per round.
json rows_of(const std::map<std::string, std::vector<double>>& tok_s, const std::vector<std::string>& order) {
  json rows = json::array();
  for (const auto& cell : order) {
    const auto& v = tok_s.at(cell);
    json rounds = json::array();
    for (size_t k = 0; k < v.size(); ++k) rounds.push_back(int(k) + 1);
    rows.push_back({{"cell", cell}, {"rung", cell}, {"status", "ok"}, {"preset", "tiny"}, {"batch", 4}, {"seq", 64},
                    {"tokens_per_s_median", v.front()}, {"per_process", {{"tokens_per_s_median", v}}},
                    {"rounds", rounds}, {"parity", {{"status", "pass"}}}});
  }
  add_ratios(rows);
  return rows;
}

TEST(Rounds, ACompositeIsAgainstItsBaseRung) {
  // x prev: the row above, except a composite RUNG+SWITCH, against RUNG when it ran.
  const json rows = rows_of({{"fp32", {100, 101}}, {"bf16", {150, 152}}, {"fp32+flash", {110, 111}},
                             {"ddp", {300, 303}}, {"ddp+zero1", {290, 292}}, {"top+act-ckpt", {200, 202}}},
                            {"fp32", "bf16", "fp32+flash", "ddp", "ddp+zero1", "top+act-ckpt"});
  std::map<std::string, json> against;
  for (const auto& r : rows) against[r["cell"].get<std::string>()] = r["speedup_vs_previous_against"];
  EXPECT_TRUE(against["fp32"].is_null());
  EXPECT_EQ(against["bf16"], "fp32");
  EXPECT_EQ(against["fp32+flash"], "fp32");
  EXPECT_EQ(against["ddp"], "fp32+flash");
  EXPECT_EQ(against["ddp+zero1"], "ddp");
  EXPECT_EQ(against["top+act-ckpt"], "ddp+zero1");  // no top in this run: the row above
  EXPECT_NEAR(rows[4]["speedup_vs_previous"].get<double>(), 291.0 / 301.5, 0.01);
}

TEST(Rounds, AutoAddsTheWideRatiosAndWhatTheyAreAgainst) {
  const auto cells = tiny_cells({"fp32", "flash", "fused-adamw"});
  RunnerOptions o;
  o.target_ci_pct = 2;
  // Three rounds; fused-adamw scatters by +-15 %, so its ratios are wide
  // (and, the noise being pooled over the rungs, flash's too): the next
  // round runs them and what they are against.
  const json rows = rows_of({{"fp32", {100, 101, 99}}, {"flash", {150, 151.5, 148.5}},
                             {"fused-adamw", {200, 240, 170}}},
                            {"fp32", "flash", "fused-adamw"});
  const auto wide = wide_ratios(read_summary_rows(rows), o);
  ASSERT_FALSE(wide.empty());
  EXPECT_TRUE(std::any_of(wide.begin(), wide.end(), [](const WideRatio& w) {
    return w.cell == "fused-adamw" && w.what == "speedup_vs_previous" && w.against == "flash";
  }));
  for (const auto& w : wide) EXPECT_GT(w.half_width_pct, 2.0) << w.cell << " " << w.what;
  std::vector<std::string> next;
  for (const Job& j : next_round(cells, wide, 4, o)) next.push_back(job_name(j));
  EXPECT_EQ(next, (std::vector<std::string>{"fp32/repeat4", "flash/repeat4", "fused-adamw/repeat4"}));
  // Everything tight: nothing to add.
  const json tight = rows_of({{"fp32", {100, 101, 99}}, {"flash", {150, 151.5, 148.5}},
                              {"fused-adamw", {200, 202, 198}}},
                             {"fp32", "flash", "fused-adamw"});
  EXPECT_TRUE(wide_ratios(read_summary_rows(tight), o).empty());
  // One round: no interval yet, so every ratio is wide.
  const json one = rows_of({{"fp32", {100}}, {"flash", {150}}}, {"fp32", "flash"});
  EXPECT_EQ(wide_ratios(read_summary_rows(one), o).size(), 2u);  // flash's x fp32 and x prev
}

TEST(Rounds, RunTableShowsIntervalsAndMarksTheUnresolved) {
  const json rows = rows_of({{"fp32", {100, 101, 99}}, {"flash", {150, 151.5, 148.5}},
                             {"fused-adamw", {155, 185, 140}}},
                            {"fp32", "flash", "fused-adamw"});
  EXPECT_TRUE(rows[1]["speedup_vs_fp32_interval"].is_array());
  EXPECT_NEAR(rows[1]["speedup_vs_fp32"].get<double>(), 1.5, 0.01);
  const Document doc = summary_document({{"rows", rows}}, "summary.json");
  const Table& t = doc.tables.front();
  size_t col = 0;
  while (t.columns[col].key != "speedup_vs_previous") ++col;
  // flash: clearly faster, its interval given; fused-adamw: +3 % +- a lot: "?".
  EXPECT_NE(t.rows[1].cells[col].text.find(" ["), std::string::npos) << t.rows[1].cells[col].text;
  EXPECT_EQ(t.rows[1].cells[col].text.back(), ']') << t.rows[1].cells[col].text;
  EXPECT_EQ(t.rows[2].cells[col].text.back(), '?') << t.rows[2].cells[col].text;
}

TEST(Rounds, AbRatiosArePairedByRound) {
  json rows = json::array();
  auto row = [](const char* side, std::vector<double> v) {
    return json{{"cell", std::string(side) + "/fp32"}, {"side", side}, {"rung", "fp32"}, {"status", "ok"},
                {"tokens_per_s_median", v[0]}, {"per_process", {{"tokens_per_s_median", v}}},
                {"rounds", {1, 2, 3, 4}}};
  };
  // Round effects of +-10 %, B 5 % slower in every round: paired, that is
  // resolved; unpaired it would not be.
  rows.push_back(row("A", {100, 110, 90, 105}));
  rows.push_back(row("B", {95.2, 104.5, 85.4, 99.8}));
  add_ratios(rows);
  const json& b = rows[1];
  EXPECT_NEAR(b["b_over_a"].get<double>(), 0.95, 0.005);
  EXPECT_LT(b["b_over_a_interval"][1].get<double>(), 0.96) << b.dump();
  EXPECT_EQ(b["b_over_a_against"], "fp32");
}

// The A/B verdicts are one family over the rungs, Holm-adjusted as
// `ladder compare`'s: a rung whose paired p is 0.026 alone (its interval
// excludes 1, -1.9 %) is not called slower beside three others. Reference
// values: scipy.stats.ttest_1samp on the logs of B/A.
TEST(Rounds, AbVerdictsAreHolmAdjustedOverTheRungs) {
  const std::vector<double> a = {100, 110, 90, 105};
  const std::map<std::string, std::vector<double>> b = {{"fp32", {95.2, 104.5, 85.4, 99.8}},     // p 5.2e-6, -5 %
                                                         {"bf16", {97.0, 109.0, 88.0, 103.5}},    // p 0.026, -1.9 %
                                                         {"flash", {100.3, 109.6, 90.2, 105.1}},  // p 0.70
                                                         {"fused-adamw", {100.3, 109.6, 90.2, 105.1}}};
  json rows = json::array();
  for (const char* rung : {"fp32", "bf16", "flash", "fused-adamw"})
    for (const char* side : {"A", "B"}) {
      const std::vector<double>& v = std::string(side) == "A" ? a : b.at(rung);
      rows.push_back({{"cell", std::string(side) + "/" + rung}, {"side", side}, {"rung", rung}, {"status", "ok"},
                      {"tokens_per_s_median", v[0]}, {"per_process", {{"tokens_per_s_median", v}}},
                      {"rounds", {1, 2, 3, 4}}});
    }
  add_ratios(rows);
  EXPECT_NEAR(rows[3]["b_over_a_p"].get<double>(), 0.026405202407406323, 1e-9);
  EXPECT_LT(rows[3]["b_over_a_interval"][1].get<double>(), 1.0);
  const Document doc = summary_document({{"rows", rows}, {"ab", {{"spec", "env:X=1"}}}}, "summary.json");
  const auto t = std::find_if(doc.tables.begin(), doc.tables.end(),
                              [](const Table& t) { return t.title.find("A/B in one run") == 0; });
  ASSERT_NE(t, doc.tables.end());
  std::map<std::string, std::string> verdict;
  for (const auto& r : t->rows) verdict[r.cells.front().text] = r.cells.back().text;
  EXPECT_EQ(verdict["fp32"], "slower");
  EXPECT_EQ(verdict["bf16"], "unresolved");  // "slower" before the adjustment
  EXPECT_EQ(verdict["flash"], "within noise");
  EXPECT_EQ(verdict["fused-adamw"], "within noise");
  // A summary from before b_over_a_p was recorded is judged the same way.
  for (auto& row : rows) row.erase("b_over_a_p");
  const Document old = summary_document({{"rows", rows}, {"ab", {{"spec", "env:X=1"}}}}, "summary.json");
  int checked = 0;
  for (const Table& table : old.tables)
    if (table.title.find("A/B in one run") == 0)
      for (const auto& r : table.rows) {
        EXPECT_EQ(r.cells.back().text, verdict[r.cells.front().text]) << r.cells.front().text;
        ++checked;
      }
  EXPECT_EQ(checked, 4);
}

}  // namespace
}  // namespace ladder
