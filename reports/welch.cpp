// reports/welch.cpp: see welch.h.
#include "reports/welch.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace ladder {

namespace {

// The continued fraction of the regularized incomplete beta I_x(a, b),
// evaluated by the modified Lentz method; converges fast for x < (a+1)/(a+b+2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-15;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    // Even step: d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m)).
    double num = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + num * d;
    c = 1.0 + num / c;
    d = 1.0 / (std::fabs(d) < kTiny ? kTiny : d);
    c = std::fabs(c) < kTiny ? kTiny : c;
    h *= d * c;
    // Odd step: d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)).
    num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + num * d;
    c = 1.0 + num / c;
    d = 1.0 / (std::fabs(d) < kTiny ? kTiny : d);
    c = std::fabs(c) < kTiny ? kTiny : c;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < kEps) break;
  }
  return h;
}

// I_x(a, b) for 0 <= x <= 1.
double regularized_incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1.0) / (a + b + 2.0)) return std::exp(log_front) * beta_continued_fraction(a, b, x) / a;
  return 1.0 - std::exp(log_front) * beta_continued_fraction(b, a, 1.0 - x) / b;
}

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

}  // namespace

double student_t_two_sided_p(double t, double df) {
  if (std::isnan(t) || !(df > 0)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(t)) return 0.0;
  return regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
}

WelchResult welch_t_test(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) throw std::invalid_argument("welch_t_test: needs at least 2 values per side");
  const double ma = mean(a), mb = mean(b);
  const double va = variance(a, ma) / double(a.size()), vb = variance(b, mb) / double(b.size());
  WelchResult r;
  const double se2 = va + vb;
  if (se2 == 0) {  // no spread on either side: the means agree or they do not
    r.t = ma == mb ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), ma - mb);
    r.df = double(a.size() + b.size() - 2);
    r.p_value = ma == mb ? 1.0 : 0.0;
    return r;
  }
  r.t = (ma - mb) / std::sqrt(se2);
  r.df = se2 * se2 / (va * va / double(a.size() - 1) + vb * vb / double(b.size() - 1));
  r.p_value = student_t_two_sided_p(r.t, r.df);
  return r;
}

}  // namespace ladder
