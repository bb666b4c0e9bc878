// reports/stats/inference.cpp: see inference.h.
#include "reports/stats/inference.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <limits>
#include <stdexcept>

#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <fmt/format.h>

#include "reports/stats/stats.h"

namespace ladder {

namespace {

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

// Unbiased sample variance (n - 1).
double variance(const std::vector<double>& v, double m) {
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size() - 1);
}

std::vector<double> logs(const std::vector<double>& v) {
  std::vector<double> out;
  for (double x : v) {
    if (!(x > 0)) throw std::invalid_argument("a ratio's samples must be positive");
    out.push_back(std::log(x));
  }
  return out;
}

// An estimate `d` (a difference of means, or of mean logs) with standard
// error `se` and `df` degrees of freedom: its interval and the two-sided p
// of no difference; no interval without degrees of freedom or a finite se.
DifferenceInterval difference_from(double d, double se, double df, double confidence) {
  DifferenceInterval out;
  out.diff = d;
  out.df = df;
  if (!(df > 0) || !std::isfinite(se)) return out;
  out.has_interval = true;
  if (se == 0) {  // no spread: the difference is what it is
    out.lo = out.hi = d;
    out.p_value = d == 0 ? 1.0 : 0.0;
    return out;
  }
  const double half = student_t_quantile(0.5 + confidence / 2, df) * se;
  out.lo = d - half;
  out.hi = d + half;
  out.p_value = student_t_two_sided_p(d / se, df);
  return out;
}

// The interval of a log-ratio estimate `d` with standard error `se` and `df`
// degrees of freedom, as a RatioInterval.
RatioInterval from_log(double d, double se, double df, double confidence, const char* method) {
  const DifferenceInterval i = difference_from(d, se, df, confidence);
  RatioInterval r;
  r.ratio = std::exp(d);
  r.confidence = confidence;
  r.df = df;
  r.method = method;
  if (!i.has_interval) return r;
  r.lo = std::exp(i.lo);
  r.hi = std::exp(i.hi);
  r.p_value = i.p_value;
  return r;
}

// The standard error of mean(b) - mean(a) over independent samples of 2+
// values each, and Welch-Satterthwaite's degrees of freedom (n_a + n_b - 2
// where neither side spreads).
struct WelchSe {
  double se = 0, df = 0;
};
WelchSe welch_se(const std::vector<double>& a, const std::vector<double>& b) {
  const double va = variance(a, mean(a)) / double(a.size()), vb = variance(b, mean(b)) / double(b.size());
  const double se2 = va + vb;
  return {std::sqrt(se2), se2 > 0 ? se2 * se2 / (va * va / double(a.size() - 1) + vb * vb / double(b.size() - 1))
                                  : double(a.size() + b.size() - 2)};
}

}  // namespace

double student_t_two_sided_p(double t, double df) {
  if (std::isnan(t) || !(df > 0)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(t)) return 0.0;
  const boost::math::students_t dist(df);
  return 2 * boost::math::cdf(boost::math::complement(dist, std::fabs(t)));
}

double student_t_quantile(double probability, double df) {
  if (!(df > 0) || !(probability > 0 && probability < 1)) return std::numeric_limits<double>::quiet_NaN();
  return boost::math::quantile(boost::math::students_t(df), probability);
}

double student_t_cdf(double t, double df) {
  if (std::isnan(t) || !(df > 0)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  return boost::math::cdf(boost::math::students_t(df), t);
}

WelchResult welch_t_test(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) throw std::invalid_argument("welch_t_test: needs at least 2 values per side");
  const double ma = mean(a), mb = mean(b);
  const WelchSe w = welch_se(a, b);
  WelchResult r;
  r.df = w.df;
  if (w.se == 0) {  // no spread on either side: the means agree or they do not
    r.t = ma == mb ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), ma - mb);
    r.p_value = ma == mb ? 1.0 : 0.0;
    return r;
  }
  r.t = (ma - mb) / w.se;
  r.p_value = student_t_two_sided_p(r.t, r.df);
  return r;
}

DifferenceInterval difference_of_independent(const std::vector<double>& a, const std::vector<double>& b,
                                             double confidence) {
  if (a.empty() || b.empty()) return {};
  const double d = mean(b) - mean(a);
  if (a.size() < 2 || b.size() < 2) return difference_from(d, NAN, 0, confidence);
  const WelchSe w = welch_se(a, b);
  return difference_from(d, w.se, w.df, confidence);
}

DifferenceInterval difference_of_paired(const std::vector<double>& a, const std::vector<double>& b,
                                        double confidence) {
  if (a.size() != b.size()) throw std::invalid_argument("difference_of_paired: the two sides differ in length");
  if (a.empty()) return {};
  std::vector<double> diffs;
  for (size_t k = 0; k < a.size(); ++k) diffs.push_back(b[k] - a[k]);
  const double d = mean(diffs);
  if (diffs.size() < 2) return difference_from(d, NAN, 0, confidence);
  return difference_from(d, std::sqrt(variance(diffs, d) / double(diffs.size())), double(diffs.size() - 1),
                         confidence);
}

bool RatioInterval::within(double noise_pct) const {
  const double t = 1 + noise_pct / 100;
  return has_interval() && lo >= 1 / t && hi <= t;
}

RatioInterval ratio_of_independent(const std::vector<double>& a, const std::vector<double>& b, double confidence) {
  if (a.empty() || b.empty()) return {};
  const auto la = logs(a), lb = logs(b);
  const double d = mean(lb) - mean(la);
  if (a.size() < 2 || b.size() < 2) return from_log(d, NAN, 0, confidence, "welch_log");
  const WelchSe w = welch_se(la, lb);
  return from_log(d, w.se, w.df, confidence, "welch_log");
}

RatioInterval ratio_of_paired(const std::vector<double>& a, const std::vector<double>& b, double confidence) {
  if (a.size() != b.size()) throw std::invalid_argument("ratio_of_paired: the two sides differ in length");
  if (a.empty()) return {};
  const auto la = logs(a), lb = logs(b);
  std::vector<double> d;
  for (size_t k = 0; k < a.size(); ++k) d.push_back(lb[k] - la[k]);
  const double md = mean(d);
  RatioInterval r = d.size() < 2 ? from_log(md, NAN, 0, confidence, "paired_log")
                                 : from_log(md, std::sqrt(variance(d, md) / double(d.size())),
                                            double(d.size() - 1), confidence, "paired_log");
  r.ratio = median_ratio(a, b);
  return r;
}

double median_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw std::invalid_argument("median_ratio: the two sides differ in length");
  if (a.empty()) return 0;
  std::vector<double> d;
  for (size_t k = 0; k < a.size(); ++k) d.push_back(std::log(b[k]) - std::log(a[k]));
  return std::exp(median(std::move(d)));
}

MedianInterval median_interval(std::vector<double> values, double confidence) {
  MedianInterval out;
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  out.median = percentile(values, 0.5);
  const boost::math::binomial half(double(n), 0.5);
  // The widest k (1-based) with P(X <= k - 1) <= (1 - confidence) / 2: [x(k), x(n-k+1)].
  size_t k = 0;
  for (size_t j = 1; 2 * j <= n; ++j)
    if (2 * boost::math::cdf(half, double(j - 1)) <= 1 - confidence) k = j;
  if (k > 0) {
    out.has_interval = true;
    out.lo = values[k - 1];
    out.hi = values[n - k];
    out.coverage = 1 - 2 * boost::math::cdf(half, double(k - 1));
  }
  const auto above = size_t(std::count_if(values.begin(), values.end(), [](double v) { return v > 0; }));
  const auto below = size_t(std::count_if(values.begin(), values.end(), [](double v) { return v < 0; }));
  if (above + below > 0) {
    const boost::math::binomial signs(double(above + below), 0.5);
    out.p_value = std::min(1.0, 2 * boost::math::cdf(signs, double(std::min(above, below))));
    out.p_above = boost::math::cdf(signs, double(below));  // P(X <= below) = P(X >= above) at p = 0.5
  }
  return out;
}

std::string ratio_text(const RatioInterval& r, const char* format) {
  if (!(r.ratio > 0)) return "-";
  const std::string point = fmt::format(fmt::runtime(format), r.ratio);
  if (!r.has_interval()) return point;
  return fmt::format("{} [{}, {}]", point, fmt::format(fmt::runtime(format), r.lo),
                     fmt::format(fmt::runtime(format), r.hi));
}

std::vector<double> holm_adjusted(const std::vector<double>& p) {
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> adjusted(p.size());
  double running = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    running = std::max(running, std::min(1.0, double(p.size() - k) * p[order[k]]));
    adjusted[order[k]] = running;
  }
  return adjusted;
}

}  // namespace ladder
