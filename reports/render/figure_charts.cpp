// reports/render/figure_charts.cpp: see figure_charts.h.
#include "reports/render/figure_charts.h"

#include <fmt/format.h>

#include "reports/model/json_fields.h"
#include "reports/model/run_figures.h"
#include "reports/render/figure_cells.h"

namespace ladder {

using nlohmann::json;
using namespace json_fields;

namespace {

// The ids that tests and links know; a figure added later is "chart-<key>".
std::string chart_id(const std::string& key) {
  if (key == "tokens_per_s_median") return "chart-tokens";
  if (key == "peak_bytes") return "chart-memory";
  return "chart-" + key;
}

// A row's value under `key` times `scale`; or, when the row is absent or not
// ok, its status in place of the value.
ChartPoint point_of(const json* row, const std::string& key, double scale) {
  ChartPoint p;
  const std::string status = row ? text(*row, "status", "missing") : "missing";
  if (status != "ok") {
    p.status = status;
  } else if (const auto v = number(*row, key)) {
    p.value = *v * scale;
    // Its 95 % interval, where the row carries one (key_interval: [lo, hi]).
    const json& i = member(*row, (key + "_interval").c_str());
    if (i.is_array() && i.size() == 2 && i[0].is_number() && i[1].is_number())
      p.interval = Interval{i[0].get<double>() * scale, i[1].get<double>() * scale};
  }
  return p;
}

void add_series(Chart& chart, const std::vector<std::string>& names, const std::vector<std::vector<const json*>>& rows,
                const std::string& key, double scale) {
  for (size_t s = 0; s < names.size(); ++s) {
    ChartSeries series{names[s], {}};
    for (size_t c = 0; c < chart.categories.size(); ++c)
      series.points.push_back(point_of(s < rows.size() && c < rows[s].size() ? rows[s][c] : nullptr, key, scale));
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
                                 const std::vector<std::vector<const json*>>& rows, const std::string& where) {
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
