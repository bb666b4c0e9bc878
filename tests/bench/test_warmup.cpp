// tests/bench/test_warmup.cpp: when warm-up is stable (bench/measure/harness/harness.h): the last
// three steps' dt within --warmup-tolerance of their minimum.
#include <gtest/gtest.h>

#include "bench/measure/harness/harness.h"

namespace ladder {
namespace {

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
