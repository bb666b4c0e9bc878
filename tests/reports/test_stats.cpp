// tests/reports/test_stats.cpp: summary statistics against values computed by hand
// (and by numpy.percentile's default linear interpolation).
#include <cmath>

#include <gtest/gtest.h>

#include "reports/stats/stats.h"

namespace ladder {
namespace {

TEST(Stats, SummaryOfOneToTen) {
  const Summary s = summarize({10, 1, 9, 2, 8, 3, 7, 4, 6, 5});
  EXPECT_EQ(s.n, 10);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_NEAR(s.p10, 1.9, 1e-12);  // numpy.percentile(range(1, 11), 10)
  EXPECT_NEAR(s.p90, 9.1, 1e-12);
  EXPECT_NEAR(s.stddev, std::sqrt(82.5 / 9.0), 1e-12);
  EXPECT_NEAR(s.cv, std::sqrt(82.5 / 9.0) / 5.5, 1e-12);
}

TEST(Stats, SingleValueHasNoSpread) {
  const Summary s = summarize({3.0});
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_DOUBLE_EQ(s.stddev, 0.0);
  EXPECT_DOUBLE_EQ(s.p10, 3.0);
}

}  // namespace
}  // namespace ladder
