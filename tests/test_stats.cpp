// tests/test_stats.cpp: summary statistics against values computed by hand
// (and by numpy.percentile's default linear interpolation).
#include <cmath>

#include <gtest/gtest.h>

#include "bench/harness.h"
#include "reports/stats.h"

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

TEST(Warmup, StableWhenTheLastThreeStepsAgreeWithinTolerance) {
  auto steps = [](std::initializer_list<double> dts) {
    std::vector<StepRecord> out;
    for (double d : dts) {
      StepRecord r;
      r.dt_ms = d;
      out.push_back(r);
    }
    return out;
  };
  EXPECT_FALSE(warmup_is_stable(steps({100, 100}), 5.0));          // fewer than the window
  EXPECT_FALSE(warmup_is_stable(steps({170, 160, 110}), 5.0));     // build-nanogpt's first CPU steps
  EXPECT_TRUE(warmup_is_stable(steps({170, 100, 104, 102}), 5.0));  // within 5 % of 100
  EXPECT_FALSE(warmup_is_stable(steps({100, 100, 105.1}), 5.0));   // 5.1 % apart
  EXPECT_TRUE(warmup_is_stable(steps({100, 100, 105.1}), 6.0));    // --warmup-tolerance 6
}

}  // namespace
}  // namespace ladder
