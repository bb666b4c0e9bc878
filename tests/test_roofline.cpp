// tests/test_roofline.cpp: the roofline's matmul ceilings without timing
// them: which shapes are probed, how rounds and later probes fold, and the
// best-of loop they are timed by.
#include <gtest/gtest.h>

#include <stdexcept>
#include <utility>

#include "bench/measure/device.h"
#include "bench/measure/roofline.h"
#include "variants/config.h"

namespace ladder {
namespace {

const torch::Device kCpu(torch::kCPU);

TEST(Roofline, EveryShapeIsTheBestOfAtLeastTwoCallsAndTheBestShapeIsKept) {
  // Tiny sizes: no timing is asserted, only what was run and recorded.
  const RooflineResult r = probe_matmul(kCpu, Precision::kFP32, 0.01, {32, 64});
  ASSERT_EQ(r.shapes.size(), 9u);  // three layouts of 32 (k = 32 and 128) and 64 (k = 64 only)
  double best = 0;
  for (const MatmulShape& s : r.shapes) {
    EXPECT_TRUE(s.skipped.empty()) << s.skipped;
    EXPECT_GE(s.reps, 2) << s.n << " " << s.k << " " << s.layout;  // never a cold first call alone
    EXPECT_TRUE(s.k == s.n || s.k == 4 * s.n) << s.k;
    EXPECT_GT(s.tflops, 0);
    best = std::max(best, s.tflops);
  }
  EXPECT_DOUBLE_EQ(r.tflops, best);
  EXPECT_TRUE(r.layout == "a@b" || r.layout == "a@b^T" || r.layout == "a^T@b") << r.layout;
  EXPECT_TRUE(r.n == 32 || r.n == 64) << r.n;
}

TEST(Roofline, RoundsKeepTheBestRateAndEveryShapesBest) {
  RooflineResult a, b, best;
  a.tflops = 2.0, a.n = 512, a.layout = "a@b", a.reps = 5, a.probe_ms = 100;
  a.shapes = {{512, 512, "a@b", 2.0, 5, ""}, {1024, 1024, "a@b", 0, 0, "too slow"}};
  b.tflops = 3.0, b.n = 1024, b.layout = "a@b", b.reps = 4, b.probe_ms = 120;
  b.shapes = {{512, 512, "a@b", 1.5, 2, ""}, {1024, 1024, "a@b", 3.0, 2, ""}};
  keep_best(best, a);
  keep_best(best, b);
  EXPECT_DOUBLE_EQ(best.tflops, 3.0);
  EXPECT_EQ(best.n, 1024);
  EXPECT_EQ(best.reps, 9);
  EXPECT_DOUBLE_EQ(best.probe_ms, 220);
  ASSERT_EQ(best.shapes.size(), 2u);
  EXPECT_DOUBLE_EQ(best.shapes[0].tflops, 2.0);  // 512's best round, its calls summed
  EXPECT_EQ(best.shapes[0].reps, 7);
  EXPECT_TRUE(best.shapes[1].skipped.empty());  // timed in the second round
  EXPECT_DOUBLE_EQ(best.shapes[1].tflops, 3.0);
}

TEST(Roofline, ALaterProbeOfTheCeilingsKeepsEachPrecisionsBest) {
  // A busy moment held the first probe's fp32 down; the second's bf16 was slower.
  const auto ceilings = [](double fp32, double bf16) {
    MatmulCeilings c;
    for (auto [p, tflops] : {std::pair{Precision::kFP32, fp32}, std::pair{Precision::kBF16, bf16}}) {
      RooflineResult r;
      r.tflops = tflops, r.n = 512, r.layout = "a@b", r.reps = 4;
      c.precisions.push_back({p, r, {tflops}});
    }
    return c;
  };
  MatmulCeilings best = ceilings(0.038, 0.17);
  keep_best(best, ceilings(0.33, 0.16));
  EXPECT_DOUBLE_EQ(best.of(Precision::kFP32).best.tflops, 0.33);
  EXPECT_DOUBLE_EQ(best.of(Precision::kBF16).best.tflops, 0.17);
  EXPECT_EQ(best.of(Precision::kFP32).tflops_per_round, (std::vector<double>{0.038, 0.33}));
  EXPECT_EQ(best.of(Precision::kBF16).best.reps, 8);
  EXPECT_THROW(best.of(Precision::kTF32), std::logic_error);
}

TEST(Roofline, BestTimeRunsWithinItsBoundsAndKeepsTheFastestCall) {
  auto timer = make_step_timer(kCpu);
  int calls = 0;
  const BestTime t = best_time(*timer, [&] { ++calls; }, 3, 0.0, 10);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(t.reps, 3);
  const BestTime capped = best_time(*timer, [&] { ++calls; }, 2, 3600.0, 5);  // max_reps ends it
  EXPECT_EQ(capped.reps, 5);
  EXPECT_LE(capped.best_ms, capped.wall_ms);
}

}  // namespace
}  // namespace ladder
