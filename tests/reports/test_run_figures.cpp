// tests/reports/test_run_figures.cpp: the run-level figures (reports/model/report/run_figures.h):
// one declaration each, read from rung reports and combined across processes,
// every key with its unit, and the run and compare tables' columns taken from
// the list.
#include <set>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/model/comparison/comparison.h"
#include "reports/render/figure_cells.h"
#include "reports/model/report/run_figures.h"
#include "reports/render/documents/run_document.h"

namespace ladder {
namespace {

using nlohmann::json;

// A complete rung report's figures, as measure writes them.
RungReport report(double dt_ms, double tok_s, std::optional<double> mfu_sheet, double mfu_roof, int64_t peak) {
  RungReport r;
  r.status = "ok";
  StepSummary summary;
  summary.metrics = {{"dt_ms", summarize({dt_ms})}, {"tokens_per_s", summarize({tok_s})},
                     {"model_tflops", summarize({tok_s * 6e9 / 1e12})}};
  r.summary = summary;
  Mfu mfu;
  mfu.datasheet.mfu_pct = mfu_sheet;
  mfu.measured_roofline.mfu_pct = mfu_roof;
  r.mfu = mfu;
  Memory memory;
  memory.measured.peak_bytes = peak;
  r.memory = memory;
  r.op_counts = std::optional<profiler::OpCounts>(profiler::OpCounts{900, 0, 0, "kineto"});
  Timing timing;
  timing.data_pct_of_dt = 1.5;
  r.timing = timing;
  return r;
}

// A ddp report's busiest rank's ring-model bytes per step.
std::optional<DdpSection> sent_bytes(double median, double max) {
  DdpSection d;
  d.across_ranks_of_medians["sent_bytes_ring"].median = median;
  d.across_ranks_of_medians["sent_bytes_ring"].max = max;
  return d;
}

TEST(RunFigures, EveryKeyCarriesItsUnitAndIsDeclaredOnce) {
  std::set<std::string> keys;
  for (const RunFigure& f : run_figures()) {
    EXPECT_TRUE(figure_key_has_unit(f.key)) << f.key << ": a figure's key ends in its unit";
    EXPECT_TRUE(keys.insert(f.key).second) << f.key << " declared twice";
    EXPECT_TRUE(f.of_report) << f.key;
    EXPECT_TRUE(!(f.shown & (kRunTable | kCompareTable)) || *f.header) << f.key << ": shown without a header";
    EXPECT_EQ(&run_figure(f.key), &f);
  }
  EXPECT_FALSE(figure_key_has_unit("speedup"));
  EXPECT_FALSE(figure_key_has_unit("mfu"));
  EXPECT_TRUE(figure_key_has_unit("dt_ms_median"));
  EXPECT_THROW(run_figure("no_such_figure_ms"), std::logic_error);
}

TEST(RunFigures, ProcessesCombineByMedianAndPeakByMax) {
  const RungReport a = report(100, 1000, std::nullopt, 40, 3 << 20), b = report(120, 900, std::nullopt, 36, 5 << 20),
                   c = report(110, 950, std::nullopt, 38, 4 << 20);
  const json f = cell_figures({&a, &b, &c});
  EXPECT_DOUBLE_EQ(f["dt_ms_median"].get<double>(), 110);
  EXPECT_DOUBLE_EQ(f["tokens_per_s_median"].get<double>(), 950);
  EXPECT_EQ(f["peak_bytes"].get<int64_t>(), 5 << 20);
  EXPECT_EQ(f["per_process"]["dt_ms_median"], json({100.0, 120.0, 110.0}));
  // No datasheet peak: MFU is against the measured roofline, marked 'p'.
  EXPECT_DOUBLE_EQ(f["mfu_pct"].get<double>(), 38);
  EXPECT_EQ(f["markers"]["mfu_pct"], "p");
  EXPECT_DOUBLE_EQ(f["ops_per_step"].get<double>(), 900);
  // With a datasheet peak, that one, unmarked.
  const RungReport d = report(100, 1000, 12.5, 40, 1);
  const json g = cell_figures({&d});
  EXPECT_DOUBLE_EQ(g["mfu_pct"].get<double>(), 12.5);
  EXPECT_EQ(g["markers"]["mfu_pct"], "");
}

TEST(RunFigures, AFigureMissingInOneProcessIsUnknownForTheCell) {
  RungReport a = report(100, 1000, std::nullopt, 40, 1), b = report(120, 900, std::nullopt, 36, 1);
  b.timing = std::nullopt;  // a report without the section
  const json f = cell_figures({&a, &b});
  EXPECT_TRUE(f["data_pct_of_dt"].is_null());
  EXPECT_EQ(f["per_process"]["data_pct_of_dt"], json({1.5, nullptr}));
}

// The run table has a column for every figure shown there, in list order,
// and each ok row's cell shows the row's value.
TEST(RunFigures, TheRunTableShowsEveryFigureDeclaredForIt) {
  const RungReport a = report(100, 1000, std::nullopt, 40, 1 << 30);
  json row = {{"cell", "fp32"}, {"rung", "fp32"}, {"status", "ok"}, {"parity", {{"status", "baseline"}}}};
  const json f = cell_figures({&a});
  for (const RunFigure& fig : run_figures()) row[fig.key] = f[fig.key];
  row["markers"] = f["markers"];
  const Document doc = summary_document({{"rows", json::array({row})}}, "summary.json");
  const Table& t = doc.tables.front();
  for (const RunFigure& fig : run_figures()) {
    size_t col = 0;
    while (col < t.columns.size() && t.columns[col].key != fig.key) ++col;
    if (!(fig.shown & kRunTable)) {
      EXPECT_EQ(col, t.columns.size()) << fig.key << " is not for the run table";
      continue;
    }
    ASSERT_LT(col, t.columns.size()) << fig.key << " has no column";
    EXPECT_EQ(t.rows.front().cells[col].text, figure_cell(fig, row[fig.key], f["markers"].value(fig.key, "")).text)
        << fig.key;
  }
  EXPECT_EQ(figure_cell(run_figure("peak_bytes"), json(1 << 30)).text, "1.00");
  EXPECT_EQ(figure_cell(run_figure("mfu_pct"), json(38.04), "p").text, "38.0p");
}

// The run table of one ok rung whose summary row holds `value` under `key`:
// that figure's column title (header and unit) and its cell's text.
std::pair<std::string, std::string> run_table_cell(const std::string& rung, const std::string& key, const json& value) {
  const json row = {{"cell", rung}, {"rung", rung}, {"status", "ok"}, {"parity", {{"status", "baseline"}}}, {key, value}};
  const Table t = summary_document({{"rows", json::array({row})}}, "summary.json").tables.front();
  for (size_t col = 0; col < t.columns.size(); ++col)
    if (t.columns[col].key == key) return {t.columns[col].title(), t.rows.front().cells[col].text};
  ADD_FAILURE() << "the run table has no column " << key;
  return {};
}

// model_tflops (bench/measure/harness/step_metrics.cpp) reaches the run table: the median
// step's model TFLOP/s, the median over processes.
TEST(RunFigures, ModelTflopsIsAColumnOfTheRunTable) {
  const RungReport a = report(100, 1000, std::nullopt, 40, 1), b = report(100, 3000, std::nullopt, 40, 1);
  const json f = cell_figures({&a, &b});
  EXPECT_DOUBLE_EQ(f["model_tflops_median"].get<double>(), 2000 * 6e9 / 1e12);  // 12 TFLOP/s
  EXPECT_EQ(run_table_cell("fp32", "model_tflops_median", f["model_tflops_median"]),
            (std::pair<std::string, std::string>{"TFLOP/s", "12"}));
}

// The ddp rung's traffic reaches the run table: the busiest rank's ring-model
// bytes per step, in MB; a rung without ranks shows '-'.
TEST(RunFigures, SentBytesIsTheBusiestRanksAndAColumnOfTheRunTable) {
  RungReport a = report(100, 1000, std::nullopt, 40, 1), b = a;
  a.ddp = sent_bytes(1.0e6, 1.5e6);
  b.ddp = sent_bytes(1.0e6, 1.25e6);
  const json f = cell_figures({&a, &b});
  EXPECT_DOUBLE_EQ(f["sent_bytes_per_step"].get<double>(), 1.5e6);
  const RungReport plain = report(100, 1000, std::nullopt, 40, 1);
  EXPECT_TRUE(cell_figures({&plain}).value("sent_bytes_per_step", json()).is_null());
  EXPECT_EQ(run_table_cell("ddp+zero1", "sent_bytes_per_step", f["sent_bytes_per_step"]),
            (std::pair<std::string, std::string>{"sent MB", "1.50"}));
}

}  // namespace
}  // namespace ladder
