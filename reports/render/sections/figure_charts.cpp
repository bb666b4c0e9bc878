// reports/render/sections/figure_charts.cpp: see figure_charts.h.
#include "reports/render/sections/figure_charts.h"

#include <fmt/format.h>

#include "reports/model/report/run_figures.h"
#include "reports/render/figure_cells.h"

namespace ladder {

namespace {

// The ids that tests and links know; a figure added later is "chart-<key>".
std::string chart_id(const std::string& key) {
  if (key == "tokens_per_s_median") return "chart-tokens";
  if (key == "peak_bytes") return "chart-memory";
  return "chart-" + key;
}

// A row's value under `key` times `scale`; or, when the row is absent or not
// ok, its status in place of the value.
ChartPoint point_of(const FigureRow& row, const std::string& key, double scale) {
  ChartPoint p;
  if (row.status != "ok") {
    p.status = row.status;
  } else if (const auto v = row.values.find(key); v != row.values.end()) {
    p.value = v->second.value * scale;
    if (const auto& i = v->second.interval) p.interval = Interval{i->first * scale, i->second * scale};
  }
  return p;
}

void add_series(Chart& chart, const std::vector<std::string>& names, const std::vector<std::vector<FigureRow>>& rows,
                const std::string& key, double scale) {
  static const FigureRow kMissing;
  for (size_t s = 0; s < names.size(); ++s) {
    ChartSeries series{names[s], {}};
    for (size_t c = 0; c < chart.categories.size(); ++c)
      series.points.push_back(point_of(s < rows.size() && c < rows[s].size() ? rows[s][c] : kMissing, key, scale));
    chart.series.push_back(std::move(series));
  }
}

Chart figure_chart(const RunFigure& f, const std::vector<std::string>& categories, const std::string& where) {
  Chart chart;
  chart.id = chart_id(f.key);
  chart.title = f.chart;
  chart.y_title = figure_column(f).title();
  chart.unit = *f.unit ? f.unit : f.header;
  chart.kind = ChartKind::kBars;
  chart.categories = categories;
  chart.y_covers = {0};
  chart.empty_note = fmt::format("no {} in {}", chart.y_title, where);
  return chart;
}

Chart speedup_chart(const std::vector<std::string>& categories, const std::string& where) {
  Chart chart;
  chart.id = "chart-speedup";
  chart.title = "Speedup over fp32 per rung (tokens/s over the same input's fp32)";
  chart.y_title = "speedup over fp32 (x)";
  chart.unit = "\u00d7";
  chart.kind = ChartKind::kLines;
  chart.categories = categories;
  chart.reference = 1;
  chart.y_covers = {0, 1};
  chart.empty_note = fmt::format("no fp32 rung to compare against in {}", where);
  return chart;
}

}  // namespace

std::vector<Chart> figure_charts(const std::vector<std::string>& categories,
                                 const std::vector<std::string>& series_names,
                                 const std::vector<std::vector<FigureRow>>& rows, const std::string& where) {
  std::vector<Chart> charts;
  for (const RunFigure& f : run_figures()) {
    if (f.chart) {
      charts.push_back(figure_chart(f, categories, where));
      add_series(charts.back(), series_names, rows, f.key, f.scale);
    }
    if (std::string(f.key) == "tokens_per_s_median") {
      charts.push_back(speedup_chart(categories, where));
      add_series(charts.back(), series_names, rows, "speedup_vs_fp32", 1);
    }
  }
  return charts;
}

}  // namespace ladder
