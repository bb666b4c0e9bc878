// reports/stats/verdict.cpp: see verdict.h.
#include "reports/stats/verdict.h"

#include <cmath>

namespace ladder {

const char* change_name(Change c) {
  switch (c) {
    case Change::kFaster: return "faster";
    case Change::kSlower: return "slower";
    case Change::kWithinNoise: return "within noise";
    case Change::kUnresolved: break;
  }
  return "unresolved";
}

Change judge_change(const RatioInterval& time, double p, double alpha, double noise_pct) {
  const bool significant = p < alpha, large = std::fabs(time.ratio - 1) * 100 >= noise_pct;
  if (significant && large && time.excludes_one()) return time.ratio < 1 ? Change::kFaster : Change::kSlower;
  if (time.within(noise_pct) || (significant && !large)) return Change::kWithinNoise;
  return Change::kUnresolved;
}

RatioInterval time_ratio_of_rate(const RatioInterval& rate) {
  RatioInterval t = rate;
  t.ratio = rate.ratio > 0 ? 1 / rate.ratio : 0;
  t.lo = rate.has_interval() ? 1 / rate.hi : 0;
  t.hi = rate.has_interval() ? 1 / rate.lo : 0;
  return t;
}

}  // namespace ladder
