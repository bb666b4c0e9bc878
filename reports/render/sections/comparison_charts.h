// reports/render/sections/comparison_charts.h: the charts of a comparison's document
// (reports/render/documents/comparison_document.cpp), from compare_runs's model: a bar chart
// per run-level figure with a chart title and the speedup over fp32
// (reports/render/sections/figure_charts.h), each rung's per-step dt spread, and where a
// step's time goes (the op breakdown stacked per rung and input).
#pragma once

#include <string>
#include <vector>

#include "profiler/trace/breakdown_section.h"
#include "reports/model/comparison/comparison_model.h"
#include "reports/render/chart.h"

namespace ladder {

// The op breakdown's categories, bottom to top of the stacked chart, each
// with its colour: GEMMs at the base, so that the elementwise band that
// fusion removes sits right above them.
const std::vector<ChartLayer>& breakdown_layers();

// The value of the category a layer names (its key, as category_key spells it).
template <class T>
const T& category_value(const profiler::PerCategory<T>& values, const std::string& key) {
  for (size_t c = 0; c < profiler::kCategoryCount; ++c)
    if (key == profiler::category_key(profiler::Category(c))) return values.values[c];
  static const T kNone{};
  return kNone;
}

// Each input's label, in the order of the comparison's inputs.
std::vector<std::string> input_labels(const Comparison& cmp);

// In the order the page shows them; a cell without data (missing, failed, no
// breakdown) gives a point without data.
std::vector<Chart> comparison_charts(const Comparison& cmp);

}  // namespace ladder
