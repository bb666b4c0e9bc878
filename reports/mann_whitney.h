// reports/mann_whitney.h: the two-sided Mann-Whitney U test, the verdict
// behind `ladder compare` (as google/benchmark's compare.py uses it).
//
// Method as SciPy's mannwhitneyu(method="auto"): the exact distribution of U
// when a sample has at most 8 values and there are no ties (here also only
// while the other has at most 50, to bound the table); otherwise the normal
// approximation with tie correction and continuity correction.
#pragma once

#include <string>
#include <vector>

namespace ladder {

struct MannWhitneyResult {
  double u = 0;        // U statistic of the first sample
  double p_value = 1;  // two-sided
  std::string method;  // "exact" or "asymptotic"
};

MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// Fewer samples than this per side cannot give p < 0.05 with the exact test
// (the smallest two-sided p for 3 vs 3 is 0.1); compare warns below it.
inline constexpr size_t kMinSamplesForVerdict = 4;

}  // namespace ladder
