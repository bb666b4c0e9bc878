// reports/render/sections/comparison_charts.cpp: see comparison_charts.h.
#include "reports/render/sections/comparison_charts.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "reports/model/json_fields.h"
#include "reports/render/sections/figure_charts.h"
#include "reports/model/report/run_figures.h"
#include "reports/stats/stats.h"

namespace ladder {

const std::vector<ChartLayer>& breakdown_layers() {
  static const std::vector<ChartLayer> kLayers = {
      {"gemm", "GEMM", "#4e79a7"},
      {"attention", "attention", "#76b7b2"},
      {"elementwise_norm", "elementwise/norm", "#e15759"},
      {"softmax_loss", "loss", "#f28e2b"},
      {"optimizer", "optimizer", "#59a14f"},
      {"memcpy_memset", "memcpy/memset", "#edc948"},
      {"communication", "communication", "#b07aa1"},
      {"idle_other", "idle/other", "#bab0ac"},
  };
  return kLayers;
}

std::vector<std::string> input_labels(const Comparison& cmp) {
  std::vector<std::string> labels;
  for (const auto& in : cmp.inputs) labels.push_back(in.label);
  return labels;
}

namespace {

// The model's grid: rung names, input labels, and each input's cell per rung.
struct Grid {
  std::vector<std::string> rungs, labels;
  std::vector<std::vector<const InputCell*>> cells;  // [input][rung]; nullptr where absent
};

Grid grid_of(const Comparison& cmp) {
  Grid g;
  g.labels = input_labels(cmp);
  g.cells.resize(g.labels.size());
  for (const auto& rung : cmp.rungs) {
    g.rungs.push_back(rung.rung);
    for (size_t i = 0; i < g.labels.size(); ++i)
      g.cells[i].push_back(i < rung.inputs.size() ? &rung.inputs[i] : nullptr);
  }
  return g;
}

// One series per input, its points one per rung, made by `point` from the cell.
void add_series(Chart& chart, const Grid& g, ChartPoint (*point)(const InputCell*)) {
  for (size_t i = 0; i < g.labels.size(); ++i) {
    chart.series.push_back({g.labels[i], {}});
    for (const InputCell* cell : g.cells[i]) chart.series.back().points.push_back(point(cell));
  }
}

// Why a cell has nothing to draw: its status, or "" (a dash) when it is ok.
std::string absent_status(const InputCell* cell) {
  const std::string status = cell ? cell->status : "missing";
  return status == "ok" ? "" : status;
}

// One cell's steps as % off their median, and what they were in ms.
ChartPoint dt_point(const InputCell* cell) {
  ChartPoint p;
  const std::vector<double> ms = cell ? cell->dt_ms_samples : std::vector<double>{};
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double median = percentile(sorted, 0.5);
  if (ms.empty() || !(median > 0)) {
    p.status = absent_status(cell);
    return p;
  }
  for (double v : ms) p.samples.push_back((v / median - 1) * 100);
  p.hover = fmt::format(
      "median {:.2f} ms, p25\u2013p75 {:.2f}\u2013{:.2f} ms, min\u2013max {:.2f}\u2013{:.2f} ms, n={}", median,
      percentile(sorted, 0.25), percentile(sorted, 0.75), sorted.front(), sorted.back(), sorted.size());
  return p;
}

// Per-step dt of every rung and input as a deviation from that cell's
// median, so that noise compares across rungs of very different speed.
Chart dt_chart(const Grid& g) {
  Chart chart;
  chart.id = "chart-dt";
  chart.title = "Per-step time spread (each step's dt relative to its median; medians in the tables)";
  chart.y_title = "dt vs median (%)";
  chart.unit = "%";
  chart.kind = ChartKind::kSpread;
  chart.categories = g.rungs;
  chart.reference = 0;
  chart.y_covers = {-1, 1};  // at least +-1 %, so that a quiet run still has an axis
  chart.empty_note = "no per-step dt in these inputs";
  add_series(chart, g, dt_point);
  return chart;
}

ChartPoint breakdown_point(const InputCell* cell) {
  ChartPoint p;
  for (const auto& layer : breakdown_layers())
    p.stack.push_back(cell && cell->op_breakdown_ms ? category_value(*cell->op_breakdown_ms, layer.key) : 0);
  if (!p.has_data()) {
    p.stack.clear();
    p.status = absent_status(cell);
  }
  return p;
}

// Where each step's time went: per rung, one stacked bar per input of the op
// breakdown's categories in ms per step. Fusion shows as the elementwise/norm
// band shrinking from one rung to the next.
Chart breakdown_chart(const Grid& g) {
  Chart chart;
  chart.id = "chart-breakdown";
  chart.title = "Where a step's time goes (op breakdown, ms per step; inputs left to right in each rung)";
  chart.y_title = "ms per step";
  chart.unit = "ms per step";
  chart.kind = ChartKind::kStacked;
  chart.categories = g.rungs;
  chart.layers = breakdown_layers();
  chart.y_covers = {0};
  chart.empty_note = "no breakdown in these inputs";
  add_series(chart, g, breakdown_point);
  return chart;
}

// An input's figures at a rung as the charts read them.
FigureRow figure_row(const InputCell* cell) {
  FigureRow r;
  if (!cell) return r;
  r.status = cell->status;
  for (const auto& [key, v] : cell->figures)
    if (v) r.values[key] = {*v, std::nullopt};
  if (cell->speedup_vs_fp32)
    r.values.insert_or_assign("speedup_vs_fp32", FigureValue{*cell->speedup_vs_fp32, cell->speedup_vs_fp32_interval});
  return r;
}

}  // namespace

std::vector<Chart> comparison_charts(const Comparison& cmp) {
  const Grid g = grid_of(cmp);
  std::vector<std::vector<FigureRow>> rows(g.cells.size());
  for (size_t i = 0; i < g.cells.size(); ++i)
    for (const InputCell* cell : g.cells[i]) rows[i].push_back(figure_row(cell));
  std::vector<Chart> charts = figure_charts(g.rungs, g.labels, rows, "these inputs");
  charts.push_back(dt_chart(g));
  charts.push_back(breakdown_chart(g));
  return charts;
}

}  // namespace ladder
