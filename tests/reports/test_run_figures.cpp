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
  const CellFigures f = cell_figures_of({&a, &b, &c});
  EXPECT_EQ(f.values.at("dt_ms_median"), 110);
  EXPECT_EQ(f.values.at("tokens_per_s_median"), 950);
  EXPECT_EQ(f.values.at("peak_bytes"), 5 << 20);
  EXPECT_EQ(f.per_process.at("dt_ms_median"), (std::vector<std::optional<double>>{100.0, 120.0, 110.0}));
  // No datasheet peak: MFU is against the measured roofline, marked 'p'.
  EXPECT_EQ(f.values.at("mfu_pct"), 38);
  EXPECT_EQ(f.markers.at("mfu_pct"), "p");
  EXPECT_EQ(f.values.at("ops_per_step"), 900);
  // With a datasheet peak, that one, unmarked.
  const RungReport d = report(100, 1000, 12.5, 40, 1);
  const CellFigures g = cell_figures_of({&d});
  EXPECT_EQ(g.values.at("mfu_pct"), 12.5);
  EXPECT_EQ(g.markers.at("mfu_pct"), "");
}

TEST(RunFigures, AFigureMissingInOneProcessIsUnknownForTheCell) {
  RungReport a = report(100, 1000, std::nullopt, 40, 1), b = report(120, 900, std::nullopt, 36, 1);
  b.timing = std::nullopt;  // a report without the section
  const CellFigures f = cell_figures_of({&a, &b});
  EXPECT_EQ(f.values.at("data_pct_of_dt"), std::nullopt);
  EXPECT_EQ(f.per_process.at("data_pct_of_dt"), (std::vector<std::optional<double>>{1.5, std::nullopt}));
}

// The run table has a column for every figure shown there, in list order,
// and each ok row's cell shows the row's value.
TEST(RunFigures, TheRunTableShowsEveryFigureDeclaredForIt) {
  const RungReport a = report(100, 1000, std::nullopt, 40, 1 << 30);
  json row = {{"cell", "fp32"}, {"rung", "fp32"}, {"status", "ok"}, {"parity", {{"status", "baseline"}}}};
  const CellFigures f = cell_figures_of({&a});
  for (const RunFigure& fig : run_figures()) row[fig.key] = fields::to_json(f.values.at(fig.key));
  row["markers"] = f.markers;
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
    const auto marker = f.markers.find(fig.key);
    EXPECT_EQ(t.rows.front().cells[col].text,
              figure_cell(fig, f.values.at(fig.key), marker == f.markers.end() ? "" : marker->second).text)
        << fig.key;
  }
  EXPECT_EQ(figure_cell(run_figure("peak_bytes"), double(1 << 30)).text, "1.00");
  EXPECT_EQ(figure_cell(run_figure("mfu_pct"), 38.04, "p").text, "38.0p");
  EXPECT_EQ(figure_cell(run_figure("mfu_pct"), std::optional<double>()).text, "-");
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
  const CellFigures f = cell_figures_of({&a, &b});
  EXPECT_DOUBLE_EQ(f.values.at("model_tflops_median").value(), 2000 * 6e9 / 1e12);  // 12 TFLOP/s
  EXPECT_EQ(run_table_cell("fp32", "model_tflops_median", *f.values.at("model_tflops_median")),
            (std::pair<std::string, std::string>{"TFLOP/s", "12"}));
}

// The ddp rung's traffic reaches the run table: the busiest rank's ring-model
// bytes per step, in MB; a rung without ranks shows '-'.
TEST(RunFigures, SentBytesIsTheBusiestRanksAndAColumnOfTheRunTable) {
  RungReport a = report(100, 1000, std::nullopt, 40, 1), b = a;
  a.ddp = sent_bytes(1.0e6, 1.5e6);
  b.ddp = sent_bytes(1.0e6, 1.25e6);
  const CellFigures f = cell_figures_of({&a, &b});
  EXPECT_EQ(f.values.at("sent_bytes_per_step"), 1.5e6);
  const RungReport plain = report(100, 1000, std::nullopt, 40, 1);
  EXPECT_EQ(cell_figures_of({&plain}).values.at("sent_bytes_per_step"), std::nullopt);
  EXPECT_EQ(run_table_cell("ddp+zero1", "sent_bytes_per_step", *f.values.at("sent_bytes_per_step")),
            (std::pair<std::string, std::string>{"sent MB", "1.50"}));
}

}  // namespace
}  // namespace ladder
