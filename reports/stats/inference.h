// reports/stats/inference.h: the statistics behind ladder's verdicts and intervals,
// from Boost.Math (Student's t distribution: its CDF for p-values, its
// quantile for intervals).
//
// The samples are per-process values: a process's median step time or
// tokens/s. Steps of one process are not independent samples, so nothing here
// takes them. Ratios are estimated on the log scale, where a machine's noise
// is about additive (a busy neighbour slows every step by a factor): the
// interval of log(b/a) from Student's t, exponentiated, is an interval of the
// ratio of geometric means.
#pragma once

#include <string>
#include <vector>

namespace ladder {

// P(|T| >= |t|) for Student's t with `df` degrees of freedom (df may be
// fractional, as Welch's is).
double student_t_two_sided_p(double t, double df);
// The t with P(T <= t) = probability.
double student_t_quantile(double probability, double df);
// P(T <= t), one-sided.
double student_t_cdf(double t, double df);

struct WelchResult {
  double t = 0;        // (mean(a) - mean(b)) / standard error of the difference
  double df = 0;       // Welch-Satterthwaite degrees of freedom
  double p_value = 1;  // two-sided
};

// Welch's two-sample t-test (unequal variances), as
// scipy.stats.ttest_ind(a, b, equal_var=False). Needs at least two values per
// side. Two samples without spread give p = 1 when their means agree, p = 0
// when they differ.
WelchResult welch_t_test(const std::vector<double>& a, const std::vector<double>& b);

// mean(b) - mean(a) from independent per-process values that may be 0 (a
// kernel family's ms per step, 0 in a process that did not run it), with
// Welch's interval of a difference of means and its two-sided p. Needs 2+
// values a side for an interval.
struct DifferenceInterval {
  double diff = 0, lo = 0, hi = 0, df = 0, p_value = 1;
  bool has_interval = false;
};
DifferenceInterval difference_of_independent(const std::vector<double>& a, const std::vector<double>& b,
                                             double confidence = 0.95);
// The same from values paired by index (the two sides' processes of one
// round of an A/B run): the t interval of the mean of b_k - a_k, n - 1
// degrees of freedom. Needs 2+ pairs for an interval.
DifferenceInterval difference_of_paired(const std::vector<double>& a, const std::vector<double>& b,
                                        double confidence = 0.95);

// A ratio of two positive quantities with its confidence interval.
struct RatioInterval {
  double ratio = 0;    // the estimate; 0 when there is none
  double lo = 0, hi = 0;  // the interval's bounds; 0 when it cannot be formed (too few samples)
  double confidence = 0.95;
  double df = 0;       // of the t quantile
  double p_value = 1;  // two-sided, of "the ratio is 1"
  std::string method;  // "welch_log", "paired_log", "block_design"
  int left_out = 0;    // processes of the two sides left out as disturbed (block_design.h)
  bool has_interval() const { return lo > 0 && hi > 0; }
  // Whether the interval lies above 1 or below it.
  bool excludes_one() const { return has_interval() && (lo > 1 || hi < 1); }
  // Whether the interval lies within [1/(1+t), 1+t], t = noise_pct / 100:
  // whatever the true ratio is, it is within the noise threshold of 1.
  bool within(double noise_pct) const;
};

// b over a from independent per-process values (two runs, or two sets of
// processes not paired in time): the ratio of geometric means and Welch's
// interval on the logs. Needs 2+ values a side for an interval.
RatioInterval ratio_of_independent(const std::vector<double>& a, const std::vector<double>& b,
                                   double confidence = 0.95);

// b over a from values paired by index (process k of a and of b ran in the
// same round, back to back): the t interval of the mean of log(b_k / a_k)
// with n - 1 degrees of freedom, and its p-value; the point is the robust
// median_ratio. Needs 2+ pairs for an interval.
RatioInterval ratio_of_paired(const std::vector<double>& a, const std::vector<double>& b,
                              double confidence = 0.95);

// The robust estimate of a ratio: b over a from values paired by index (the
// two cells' processes of one round), as the median of the per-pair ratios,
// taken on the log scale (an even count gives the geometric mean of the two
// middle ones). One disturbed pair of three cannot move it, where it sets
// the mean of the logs; 0 without pairs. Every ratio between the cells of a
// run takes its point from here (block_design.h, ratio_of_paired).
double median_ratio(const std::vector<double>& a, const std::vector<double>& b);

// Holm-Bonferroni: the family of tests, not each one, keeps its false-alarm
// rate at alpha (nine rungs tested at 0.05 each would call some rung of an
// A/A pair faster or slower in about a third of comparisons). The adjusted
// p of the k-th smallest of m p-values is max over j <= k of
// min(1, (m - j + 1) p_(j)); returned in the order given, as
// statsmodels.stats.multitest.multipletests(p, method="holm").
std::vector<double> holm_adjusted(const std::vector<double>& p);

// The median of per-step values (a rank's log ratio to the others in each
// step, reports/model/report/slow_rank.h) with a distribution-free interval: the
// order statistics [x(k), x(n-k+1)] whose binomial coverage is at least
// `confidence` (Boost.Math's binomial distribution), and the sign test's
// p-values of "the median is 0" (zeros dropped): two-sided, and one-sided
// against a median above 0. A run of a few
// disturbed steps moves neither, where it moves a mean and its t interval.
// No interval (has_interval false) below 6 values at 95 %.
struct MedianInterval {
  double median = 0, lo = 0, hi = 0;
  double p_value = 1;
  double p_above = 1;  // one-sided: of "the median is 0" against "above 0", P(X >= values above 0)
  bool has_interval = false;
  double coverage = 0;  // of [lo, hi]
};
MedianInterval median_interval(std::vector<double> values, double confidence = 0.95);

// "1.35x [1.21, 1.50]", or "1.35x" without an interval.
std::string ratio_text(const RatioInterval& r, const char* format = "{:.2f}");

}  // namespace ladder
