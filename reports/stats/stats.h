// reports/stats/stats.h: summary statistics over a per-step series.
#pragma once

#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ladder {

struct Summary {
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0, p10 = 0, p90 = 0;
  double cv = 0;  // stddev / mean
  int n = 0;
};

// Percentiles interpolate linearly between order statistics (numpy's
// default); stddev is the sample standard deviation (n - 1).
Summary summarize(std::vector<double> values);
double percentile(const std::vector<double>& sorted, double q);  // q in [0, 1]

void to_json(nlohmann::json& j, const Summary& s);

}  // namespace ladder
