// reports/render/figure_charts.h: the charts a run's document and a comparison's
// both draw, per rung and input (a run is one input): a bar chart of each
// run-level figure that declares a chart title (reports/model/run_figures.h:
// tokens/s, peak memory), and right after tokens/s, as in the run table, each
// input's speedup over its own fp32 rung as lines.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/render/chart.h"

namespace ladder {

// rows[s][c]: the figures of series s (an input) at category c (a rung), as a
// comparison's input cell or a run's summary row holds them: "status", each
// figure under its key, "speedup_vs_fp32"; nullptr where the input has none.
// `where` ends an empty chart's note: "no tok/s in these inputs".
std::vector<Chart> figure_charts(const std::vector<std::string>& categories,
                                 const std::vector<std::string>& series_names,
                                 const std::vector<std::vector<const nlohmann::json*>>& rows, const std::string& where);

}  // namespace ladder
