// reports/render/sections/figure_charts.h: the charts a run's document and a comparison's
// both draw, per rung and input (a run is one input): a bar chart of each
// run-level figure that declares a chart title (reports/model/report/run_figures.h:
// tokens/s, peak memory), and right after tokens/s, as in the run table, each
// input's speedup over its own fp32 rung as lines.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reports/render/chart.h"

namespace ladder {

// A figure's value at one rung of one input, and its 95 % interval where one
// was recorded.
struct FigureValue {
  double value = 0;
  std::optional<std::pair<double, double>> interval;
};

// The figures of one input (or a run) at one rung: its status, and each
// figure that has a value, by its key (reports/model/report/run_figures.h) or
// "speedup_vs_fp32". A row that is not ok draws its status in place of values.
struct FigureRow {
  std::string status = "missing";
  std::map<std::string, FigureValue> values;
};

// rows[s][c]: the figures of series s (an input) at category c (a rung); a
// row past the end reads as missing. `where` ends an empty chart's note: "no
// tok/s in these inputs".
std::vector<Chart> figure_charts(const std::vector<std::string>& categories,
                                 const std::vector<std::string>& series_names,
                                 const std::vector<std::vector<FigureRow>>& rows, const std::string& where);

}  // namespace ladder
