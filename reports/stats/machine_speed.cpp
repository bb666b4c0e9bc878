// reports/stats/machine_speed.cpp: see machine_speed.h.
#include "reports/stats/machine_speed.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "reports/stats/stats.h"

namespace ladder {

namespace {

constexpr double kShareOfDtRange = 0.5;  // the probe's range against dt's
constexpr double kMinCorrelation = 0.5;  // 3+ processes

double half_range_pct(const std::vector<double>& logs) {
  const auto [lo, hi] = std::minmax_element(logs.begin(), logs.end());
  return 100 * (std::exp((*hi - *lo) / 2) - 1);
}

double correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = double(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

}  // namespace

std::optional<ProbeSpread> probe_spread(const std::vector<double>& dt_ms, const std::vector<double>& speed_index,
                                        double cv_limit) {
  if (dt_ms.size() < 2 || dt_ms.size() != speed_index.size()) return std::nullopt;
  std::vector<double> log_dt, log_probe_time;
  for (size_t i = 0; i < dt_ms.size(); ++i) {
    if (!(dt_ms[i] > 0 && speed_index[i] > 0)) return std::nullopt;
    log_dt.push_back(std::log(dt_ms[i]));
    log_probe_time.push_back(-std::log(speed_index[i]));  // the probe's time: 1 / its speed
  }
  ProbeSpread s;
  s.processes = int(dt_ms.size());
  s.dt_half_range_pct = half_range_pct(log_dt);
  s.probe_half_range_pct = half_range_pct(log_probe_time);
  s.correlation = correlation(log_dt, log_probe_time);
  s.dt_noisy = summarize(dt_ms).cv > cv_limit;
  const double dt_range = std::log1p(s.dt_half_range_pct / 100), probe_range = std::log1p(s.probe_half_range_pct / 100);
  s.explains = s.dt_noisy && probe_range >= kShareOfDtRange * dt_range && s.correlation >= kMinCorrelation;
  if (s.explains)
    s.cause = fmt::format("the machine's speed varied: probe +-{:.1f} % across processes (dt +-{:.1f} %)",
                          s.probe_half_range_pct, s.dt_half_range_pct);
  return s;
}

}  // namespace ladder
