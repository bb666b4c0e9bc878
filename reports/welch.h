// reports/welch.h: Welch's two-sample t-test (unequal variances), the
// verdict of `ladder compare` over independent processes.
//
// With --repeat N every rung is measured in N processes; each process's
// median dt is one independent sample. With 2-3 samples per side a rank test
// cannot reach p < 0.05 (the smallest two-sided Mann-Whitney p for 3 vs 3 is
// 0.1), so per-process medians are tested with Welch's t, as
// scipy.stats.ttest_ind(a, b, equal_var=False) does: Welch-Satterthwaite
// degrees of freedom, two-sided p from Student's t distribution.
#pragma once

#include <vector>

namespace ladder {

struct WelchResult {
  double t = 0;        // (mean(a) - mean(b)) / standard error of the difference
  double df = 0;       // Welch-Satterthwaite degrees of freedom
  double p_value = 1;  // two-sided
};

// Needs at least two values per side. Two samples without spread give
// p = 1 when their means agree, p = 0 when they differ.
WelchResult welch_t_test(const std::vector<double>& a, const std::vector<double>& b);

// Two-sided p of Student's t distribution with `df` degrees of freedom:
// P(|T| >= |t|) = I_{df/(df+t^2)}(df/2, 1/2), the regularized incomplete beta.
double student_t_two_sided_p(double t, double df);

}  // namespace ladder
