// tests/test_mann_whitney.cpp: the U test against SciPy's values.
// Reference: scipy.stats.mannwhitneyu(a, b, alternative="two-sided") with
// SciPy 1.16 (method "auto"), run once and stored here.
#include <gtest/gtest.h>

#include "reports/mann_whitney.h"

namespace ladder {
namespace {

TEST(MannWhitney, ExactSeparatedSamples) {
  const auto r = mann_whitney_u({1.1, 2.2, 3.3, 4.4}, {5.5, 6.6, 7.7, 8.8, 9.9});
  EXPECT_EQ(r.method, "exact");
  EXPECT_DOUBLE_EQ(r.u, 0.0);
  EXPECT_NEAR(r.p_value, 0.015873015873015872, 1e-12);  // 2 / C(9, 4)
}

TEST(MannWhitney, ExactOverlappingSamples) {
  const auto r = mann_whitney_u({3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.6}, {6.0, 5.3, 5.8, 9.7, 9.3, 2.4});
  EXPECT_EQ(r.method, "exact");
  EXPECT_DOUBLE_EQ(r.u, 8.0);
  EXPECT_NEAR(r.p_value, 0.07342657342657342, 1e-12);
}

TEST(MannWhitney, AsymptoticWithTies) {
  const auto r = mann_whitney_u({10, 11, 11, 12, 13, 13, 13, 14, 15, 16}, {12, 13, 14, 14, 15, 16, 17, 17, 18, 19});
  EXPECT_EQ(r.method, "asymptotic");
  EXPECT_DOUBLE_EQ(r.u, 18.0);
  EXPECT_NEAR(r.p_value, 0.016468265440881653, 1e-9);
}

TEST(MannWhitney, AsymptoticSameDistribution) {
  const auto r = mann_whitney_u({5.0, 5.1, 4.9, 5.2, 5.0, 4.8, 5.1, 5.3, 4.9, 5.0, 5.05, 4.95},
                                {5.0, 5.2, 4.9, 5.1, 5.0, 4.85, 5.15, 5.25, 4.95, 5.02, 5.07, 4.97});
  EXPECT_DOUBLE_EQ(r.u, 67.0);
  EXPECT_NEAR(r.p_value, 0.7936924716166661, 1e-9);
}

TEST(MannWhitney, SymmetricInItsArguments) {
  const std::vector<double> a = {3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.6}, b = {6.0, 5.3, 5.8, 9.7, 9.3, 2.4};
  EXPECT_DOUBLE_EQ(mann_whitney_u(a, b).p_value, mann_whitney_u(b, a).p_value);
  EXPECT_DOUBLE_EQ(mann_whitney_u(a, b).u + mann_whitney_u(b, a).u, double(a.size() * b.size()));
}

}  // namespace
}  // namespace ladder
