// reports/render/comparison_charts.h: the charts of a comparison's document
// (reports/render/comparison_document.cpp), from compare_runs's model: a bar chart
// per run-level figure with a chart title and the speedup over fp32
// (reports/render/figure_charts.h), each rung's per-step dt spread, and where a
// step's time goes (the op breakdown stacked per rung and input).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "reports/render/chart.h"

namespace ladder {

// The op breakdown's categories, bottom to top of the stacked chart, each
// with its colour: GEMMs at the base, so that the elementwise band that
// fusion removes sits right above them.
const std::vector<ChartLayer>& breakdown_layers();

// In the order the page shows them; absent or malformed fields of the model
// give points without data, never an exception.
std::vector<Chart> comparison_charts(const nlohmann::json& cmp);

}  // namespace ladder
