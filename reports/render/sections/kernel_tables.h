// reports/render/sections/kernel_tables.h: `ladder compare --kernels` as a person
// reads it (the model: reports/model/comparison/kernel_comparison.h).
//
// Per rung, two tables: its kernel families (a row per family, the largest
// difference first: each input's ms and calls per step, then each input's
// difference to the baseline with its 95 % interval and verdict) and its
// bands the same way; under them, the families flagged, added and removed,
// and the band with the largest gap, with its interval. For a page, a chart
// per rung of its largest differences as bars with their intervals (the
// rungs with a flagged family, or else the last rung).
#pragma once

#include <vector>

#include "reports/model/comparison/kernel_comparison.h"
#include "reports/render/document.h"

namespace ladder {

struct KernelView {
  std::vector<Table> tables;
  std::vector<Chart> charts;  // id "chart-kernels-<cell>"
};

// `labels`: the inputs' labels, the baseline first.
KernelView kernel_view(const KernelComparison& kernels, const std::vector<std::string>& labels);

}  // namespace ladder
