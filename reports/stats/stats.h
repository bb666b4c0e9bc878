// reports/stats/stats.h: summary statistics over a per-step series.
#pragma once

#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ladder {

struct Summary {
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0, p10 = 0, p90 = 0;
  double cv = 0;  // stddev / mean
  int n = 0;
  // Its JSON and schema (profiler/common/fields.h): report.summary.<metric>.
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("median", s.median);
    v("mean", s.mean);
    v("stddev", s.stddev);
    v("min", s.min);
    v("max", s.max);
    v("p10", s.p10);
    v("p90", s.p90);
    v("cv", s.cv);
    v("n", s.n);
  }
};

// Percentiles interpolate linearly between order statistics (numpy's
// default); stddev is the sample standard deviation (n - 1).
Summary summarize(std::vector<double> values);
double percentile(const std::vector<double>& sorted, double q);  // q in [0, 1]
// summarize(values).median: 0 for no values.
double median(std::vector<double> values);

void to_json(nlohmann::json& j, const Summary& s);

}  // namespace ladder
