// tests/test_inference.cpp: the statistics of reports/stats/inference.h and
// reports/stats/block_design.h, and the verdict rule of reports/stats/verdict.h (Boost.Math's Student's t) against SciPy's values.
// References: scipy.stats.ttest_ind(a, b, equal_var=False), 2 *
// scipy.stats.t.sf(t, df), scipy.stats.t.ppf (SciPy 1.16 for the Welch cases,
// 1.14.1 for the rest); the intervals from ttest_ind(log b, log a,
// equal_var=False).confidence_interval(0.95) and ttest_rel(log b,
// log a).confidence_interval(0.95), exponentiated; the block design's from
// numpy.linalg.lstsq on the one-hot design and scipy.stats.t.ppf. Each was run
// once and its numbers stored here.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <stdexcept>

#include "reports/stats/block_design.h"
#include "reports/stats/inference.h"
#include "reports/stats/verdict.h"

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

TEST(StudentT, QuantilesAsScipy) {
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.706204736432095, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 8), 2.306004135204166, 1e-12);
  EXPECT_NEAR(student_t_quantile(0.975, 2.5), 3.5746548420118773, 1e-10);  // fractional df, as Welch's
  EXPECT_NEAR(student_t_quantile(0.9, 30), 1.310415025391396, 1e-12);
  EXPECT_TRUE(std::isnan(student_t_quantile(0.975, 0)));
}

// Two runs of two processes each, 13 % apart: the interval is wide (one
// degree of freedom or two) but excludes 1.
TEST(RatioInterval, IndependentProcessesAsWelchOnLogs) {
  const RatioInterval r = ratio_of_independent({100, 102}, {113, 115});
  EXPECT_NEAR(r.ratio, 1.1287247706341592, 1e-12);
  EXPECT_NEAR(r.lo, 1.0654237198313106, 1e-9);
  EXPECT_NEAR(r.hi, 1.195786788044152, 1e-9);
  EXPECT_NEAR(r.p_value, 0.01226882889480746, 1e-9);
  EXPECT_NEAR(r.df, 1.9713767114356713, 1e-9);
  EXPECT_TRUE(r.excludes_one());
  EXPECT_FALSE(r.within(5));
  // One process a side: the ratio, and no interval.
  const RatioInterval one = ratio_of_independent({100}, {113});
  EXPECT_NEAR(one.ratio, 1.13, 1e-12);
  EXPECT_FALSE(one.has_interval());
}

TEST(RatioInterval, PairedProcessesAsTtestRelOnLogs) {
  const RatioInterval r = ratio_of_paired({10.2, 10.5, 9.9, 10.1}, {10.9, 11.3, 10.6, 10.8});
  EXPECT_NEAR(r.ratio, 1.0712038644093953, 1e-12);
  EXPECT_NEAR(r.lo, 1.0657627815286836, 1e-9);
  EXPECT_NEAR(r.hi, 1.0766727258759499, 1e-9);
  EXPECT_NEAR(r.p_value, 2.7710982987845043e-05, 1e-12);
  EXPECT_DOUBLE_EQ(r.df, 3);
  EXPECT_THROW(ratio_of_paired({1, 2}, {1}), std::invalid_argument);
}

// Holm's step-down adjustment, by hand (m = 4): sorted 0.005 x 4 = 0.02,
// 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, then max(0.06, 0.04 x 1); in the order
// given. What statsmodels' multipletests(method="holm") returns.
TEST(Holm, StepDownInTheOrderGiven) {
  const std::vector<double> adjusted = holm_adjusted({0.01, 0.04, 0.03, 0.005});
  ASSERT_EQ(adjusted.size(), 4u);
  EXPECT_DOUBLE_EQ(adjusted[0], 0.03);
  EXPECT_DOUBLE_EQ(adjusted[1], 0.06);
  EXPECT_DOUBLE_EQ(adjusted[2], 0.06);
  EXPECT_DOUBLE_EQ(adjusted[3], 0.02);
  EXPECT_DOUBLE_EQ(holm_adjusted({0.6, 0.7})[1], 1.0);  // capped at 1
  EXPECT_TRUE(holm_adjusted({}).empty());
}

TEST(RatioInterval, WithinTheNoiseThresholdOrNot) {
  RatioInterval r;
  r.ratio = 1.0;
  r.lo = 0.995;
  r.hi = 1.008;
  EXPECT_TRUE(r.within(1));
  EXPECT_FALSE(r.within(0.5));
  EXPECT_FALSE(r.excludes_one());
  EXPECT_EQ(ratio_text(r), "1.00 [0.99, 1.01]");
}

// Three cells in three rounds, the rounds drifting (+10 % in round 2): the
// drift is the rounds', not the cells', and the intervals are narrow.
BlockDesign three_by_three() {
  BlockDesign d;
  const std::map<std::pair<std::string, int>, double> data = {
      {{"fp32", 1}, 100}, {{"fp32", 2}, 110}, {{"fp32", 3}, 104}, {{"flash", 1}, 80}, {{"flash", 2}, 89},
      {{"flash", 3}, 82},  {{"fused", 1}, 60}, {{"fused", 2}, 65},  {{"fused", 3}, 63}};
  for (const auto& [key, v] : data) d.add(key.first, key.second, v);
  return d;
}

TEST(BlockDesign, BalancedAsLeastSquares) {
  const BlockDesign d = three_by_three();
  const RatioInterval flash = d.ratio("fp32", "flash");
  EXPECT_NEAR(flash.ratio, 0.7991395176850065, 1e-9);
  EXPECT_NEAR(flash.lo, 0.7764709870623246, 1e-8);
  EXPECT_NEAR(flash.hi, 0.8224698402988297, 1e-8);
  EXPECT_NEAR(flash.p_value, 2.7006993754229522e-05, 1e-9);
  EXPECT_DOUBLE_EQ(d.residual_df(), 4);
  EXPECT_NEAR(d.noise_sd(), 0.012693781074759497, 1e-10);
  const RatioInterval fused = d.ratio("fp32", "fused");
  EXPECT_NEAR(fused.ratio, 0.5988614773403639, 1e-9);
  EXPECT_NEAR(fused.lo, 0.5818740684619238, 1e-8);
  EXPECT_NEAR(fused.hi, 0.616344821810445, 1e-8);
  EXPECT_FALSE(d.ratio("fp32", "no-such-cell").ratio > 0);
}

TEST(BlockDesign, UnbalancedRoundsStillEstimate) {
  BlockDesign d;
  const std::map<std::pair<std::string, int>, double> data = {
      {{"fp32", 1}, 100}, {{"fp32", 2}, 110}, {{"fp32", 3}, 104}, {{"flash", 1}, 80},
      {{"flash", 2}, 89},  {{"flash", 3}, 82},  {{"fused", 1}, 60}, {{"fused", 2}, 65}};
  for (const auto& [key, v] : data) d.add(key.first, key.second, v);
  const RatioInterval fused = d.ratio("fp32", "fused");
  EXPECT_NEAR(fused.ratio, 0.5934381162530276, 1e-9);
  EXPECT_NEAR(fused.lo, 0.5752394213760212, 1e-8);
  EXPECT_NEAR(fused.hi, 0.6122125583457483, 1e-8);
  EXPECT_DOUBLE_EQ(fused.df, 3);
}

TEST(BlockDesign, OneRoundHasNoInterval) {
  BlockDesign d;
  d.add("fp32", 1, 100);
  d.add("flash", 1, 80);
  const RatioInterval r = d.ratio("fp32", "flash");
  EXPECT_NEAR(r.ratio, 0.8, 1e-12);
  EXPECT_FALSE(r.has_interval());
}

RatioInterval time_ratio(double ratio, double lo, double hi) {
  RatioInterval r;
  r.ratio = ratio;
  r.lo = lo;
  r.hi = hi;
  return r;
}

// The one rule of compare and the A/B table: each branch, and its edges.
TEST(Verdict, EachBranchOfTheRule) {
  // 5 % faster, significant, the interval below 1: faster; the same slower.
  EXPECT_EQ(judge_change(time_ratio(0.95, 0.93, 0.97), 0.001, 0.05, 1.0), Change::kFaster);
  EXPECT_EQ(judge_change(time_ratio(1.05, 1.03, 1.07), 0.001, 0.05, 1.0), Change::kSlower);
  // Not significant after the adjustment: unresolved, although the interval excludes 1.
  EXPECT_EQ(judge_change(time_ratio(0.95, 0.93, 0.97), 0.06, 0.05, 1.0), Change::kUnresolved);
  // Significant but smaller than the threshold: within noise.
  EXPECT_EQ(judge_change(time_ratio(0.995, 0.990, 0.9999), 0.001, 0.05, 1.0), Change::kWithinNoise);
  // The interval inside [1/1.01, 1.01]: within noise whatever p says.
  EXPECT_EQ(judge_change(time_ratio(1.002, 0.995, 1.009), 0.5, 0.05, 1.0), Change::kWithinNoise);
  // Holds 1 and reaches past the threshold: unresolved.
  EXPECT_EQ(judge_change(time_ratio(1.01, 0.97, 1.05), 0.4, 0.05, 1.0), Change::kUnresolved);
  // Exactly the threshold counts as large.
  EXPECT_EQ(judge_change(time_ratio(1.01, 1.005, 1.015), 0.01, 0.05, 1.0), Change::kSlower);
  EXPECT_STREQ(change_name(Change::kWithinNoise), "within noise");
}

// tokens/s up is step time down: the A/B table judges the inverse.
TEST(Verdict, RateRatioIsJudgedAsItsTimeRatio) {
  const RatioInterval t = time_ratio_of_rate(time_ratio(1.25, 1.2, 1.3125));
  EXPECT_DOUBLE_EQ(t.ratio, 0.8);
  EXPECT_NEAR(t.lo, 1 / 1.3125, 1e-15);
  EXPECT_NEAR(t.hi, 1 / 1.2, 1e-15);
  EXPECT_EQ(judge_change(t, 0.001, 0.05, 1.0), Change::kFaster);
  const RatioInterval none = time_ratio_of_rate(time_ratio(1.25, 0, 0));
  EXPECT_FALSE(none.has_interval());
}

}  // namespace
}  // namespace ladder
