// reports/mann_whitney.cpp: see mann_whitney.h.
#include "reports/mann_whitney.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace ladder {

namespace {

// Number of arrangements of n1 + n2 distinct values whose U equals u, for
// every u in [0, n1*n2]: f(n1, n2, u) = f(n1-1, n2, u-n2) + f(n1, n2-1, u).
std::vector<double> exact_u_counts(size_t n1, size_t n2) {
  const size_t umax = n1 * n2;
  // table[i][j] holds the distribution for sizes (i, j).
  std::vector<std::vector<std::vector<double>>> table(
      n1 + 1, std::vector<std::vector<double>>(n2 + 1));
  for (size_t i = 0; i <= n1; ++i)
    for (size_t j = 0; j <= n2; ++j) {
      auto& d = table[i][j];
      d.assign(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        d[0] = 1.0;
        continue;
      }
      const auto& without_a = table[i - 1][j];  // largest value in b... shifted by j
      const auto& without_b = table[i][j - 1];
      for (size_t u = 0; u < without_b.size(); ++u) d[u] += without_b[u];
      for (size_t u = 0; u < without_a.size(); ++u) d[u + j] += without_a[u];
    }
  auto out = table[n1][n2];
  out.resize(umax + 1);
  return out;
}

}  // namespace

MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) throw std::invalid_argument("mann_whitney_u: both samples need values");
  // Midranks of the pooled sample.
  std::vector<std::pair<double, int>> pooled;
  for (double x : a) pooled.push_back({x, 0});
  for (double x : b) pooled.push_back({x, 1});
  std::sort(pooled.begin(), pooled.end(), [](auto& l, auto& r) { return l.first < r.first; });
  const size_t n = pooled.size();
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && pooled[j + 1].first == pooled[i].first) ++j;
    const double t = double(j - i + 1);
    const double midrank = (double(i) + double(j)) / 2.0 + 1.0;
    for (size_t k = i; k <= j; ++k)
      if (pooled[k].second == 0) rank_sum_a += midrank;
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j + 1;
  }
  MannWhitneyResult r;
  r.u = rank_sum_a - double(n1) * double(n1 + 1) / 2.0;
  const double u_max = std::max(r.u, double(n1) * double(n2) - r.u);
  if (std::min(n1, n2) <= 8 && std::max(n1, n2) <= 50 && !ties) {
    r.method = "exact";
    const auto counts = exact_u_counts(n1, n2);
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    // P(U >= u_max), by symmetry equal to P(U <= n1 n2 - u_max).
    double tail = 0;
    for (size_t u = size_t(std::llround(u_max)); u < counts.size(); ++u) tail += counts[u];
    r.p_value = std::min(1.0, 2.0 * tail / total);
    return r;
  }
  r.method = "asymptotic";
  const double mu = double(n1) * double(n2) / 2.0;
  const double nn = double(n);
  const double sigma =
      std::sqrt(double(n1) * double(n2) / 12.0 * ((nn + 1.0) - tie_term / (nn * (nn - 1.0))));
  if (sigma == 0) {
    r.p_value = 1.0;
    return r;
  }
  const double z = (u_max - mu - 0.5) / sigma;  // continuity correction
  r.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return r;
}

}  // namespace ladder
