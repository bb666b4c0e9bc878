// tests/test_welch.cpp: Welch's t-test against SciPy's values.
// Reference: scipy.stats.ttest_ind(a, b, equal_var=False) and
// 2 * scipy.stats.t.sf(t, df) with SciPy 1.16, run once and stored here.
#include <gtest/gtest.h>

#include <stdexcept>

#include "reports/welch.h"

namespace ladder {
namespace {

TEST(Welch, StudentTTwoSidedP) {
  EXPECT_NEAR(student_t_two_sided_p(2.0, 5), 0.10193947882985835, 1e-10);
  EXPECT_NEAR(student_t_two_sided_p(12.706, 1), 0.05000080235813319, 1e-10);  // the t-table's 5 % point
  EXPECT_NEAR(student_t_two_sided_p(1.5, 2.5), 0.24783645308629618, 1e-10);  // fractional df
  EXPECT_NEAR(student_t_two_sided_p(-3.0, 37.3), 0.004790311541951417, 1e-10);  // symmetric in t
  EXPECT_DOUBLE_EQ(student_t_two_sided_p(0.0, 4), 1.0);
}

TEST(Welch, ThreeProcessesAPartDetected) {
  // Three per-process medians per side, 4 % apart with ~1 % spread.
  const auto r = welch_t_test({100.0, 101.5, 99.2}, {104.1, 103.0, 105.2});
  EXPECT_NEAR(r.t, -4.174931354342436, 1e-9);
  EXPECT_NEAR(r.df, 3.9858485203143306, 1e-9);
  EXPECT_NEAR(r.p_value, 0.014079109483829132, 1e-9);
}

TEST(Welch, OverlappingSamplesNotSignificant) {
  const auto r = welch_t_test({10, 11, 12, 13}, {10.5, 11.5, 12.2});
  EXPECT_NEAR(r.t, 0.12309149097933231, 1e-9);
  EXPECT_NEAR(r.df, 4.979655778309376, 1e-9);
  EXPECT_NEAR(r.p_value, 0.9068483223375357, 1e-9);
}

TEST(Welch, NoSpread) {
  EXPECT_DOUBLE_EQ(welch_t_test({5, 5}, {5, 5}).p_value, 1.0);
  EXPECT_DOUBLE_EQ(welch_t_test({5, 5}, {6, 6}).p_value, 0.0);
}

TEST(Welch, NeedsTwoPerSide) { EXPECT_THROW(welch_t_test({1.0}, {1.0, 2.0}), std::invalid_argument); }

}  // namespace
}  // namespace ladder
