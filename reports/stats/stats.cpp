// reports/stats/stats.cpp: see stats.h.
#include "reports/stats/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "profiler/common/fields.h"

namespace ladder {

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double pos = q * double(sorted.size() - 1);
  const auto lo = size_t(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = int(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = percentile(v, 0.5);
  s.p10 = percentile(v, 0.1);
  s.p90 = percentile(v, 0.9);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(ss / double(v.size() - 1)) : 0.0;
  s.cv = s.mean != 0 ? s.stddev / std::fabs(s.mean) : 0.0;
  return s;
}

double median(std::vector<double> values) { return summarize(std::move(values)).median; }

void to_json(nlohmann::json& j, const Summary& s) { j = fields::to_json(s); }

}  // namespace ladder
