// tests/bench/test_micro.cpp: the micro-benchmark harness's exactly computable
// parts: the relative error of its checks, the tolerances, and the DDP
// bucket sizes the all-reduce family times.
#include <cmath>
#include <limits>
#include <numeric>

#include <gtest/gtest.h>

#include "bench/micro/ddp_buckets.h"
#include "bench/micro/harness.h"
#include "variants/config/config.h"
#include "variants/config/rungs.h"

namespace ladder::micro {
namespace {

TEST(Micro, RelErrIsTheNormOfTheDifferenceOverTheNormOfTheReference) {
  auto want = torch::tensor({3.0f, 4.0f});                                   // norm 5
  EXPECT_DOUBLE_EQ(rel_err(torch::tensor({3.0f, 4.5f}), want), 0.5 / 5.0);  // |(0, 0.5)| / 5
  EXPECT_DOUBLE_EQ(rel_err(want.to(torch::kBFloat16), want), 0.0);         // 3 and 4 are exact in bf16
  EXPECT_DOUBLE_EQ(rel_err(torch::zeros({2}), torch::zeros({2})), 0.0);
  EXPECT_TRUE(std::isinf(rel_err(torch::ones({2}), torch::zeros({2}))));  // nonzero where zero is required
  EXPECT_THROW(rel_err(torch::ones({2}), torch::ones({3})), c10::Error);
}

TEST(Micro, CompareAllKeepsTheWorstPairAndNeverPassesNaN) {
  auto want = torch::tensor({3.0f, 4.0f});
  CheckResult r = compare_all({{torch::tensor({3.0f, 4.5f}), want}, {want, want}}, 0.05, "x");
  EXPECT_DOUBLE_EQ(r.rel_err, 0.1);
  EXPECT_FALSE(r.passed);
  r = compare_all({{torch::tensor({3.0f, 4.5f}), want}}, 0.1, "x");
  EXPECT_TRUE(r.passed);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  r = compare_all({{torch::tensor({nan, 4.0f}), want}, {want, want}}, 1e9, "x");
  EXPECT_TRUE(std::isnan(r.rel_err));
  EXPECT_FALSE(r.passed);
}

// A way the device has no kernel for is skipped and said, not a failed
// check (the run's exit code counts failed checks); a failed one still counts.
TEST(Micro, UnavailableWayIsNotAFailedCheck) {
  const int before = failed_checks();
  const CheckResult& missing =
      check_once("test/unavailable", [] { return unavailable_check("cuBLASLt has no kernel here: none"); });
  EXPECT_TRUE(missing.unavailable);
  EXPECT_FALSE(missing.passed);
  EXPECT_EQ(missing.what, "cuBLASLt has no kernel here: none");
  EXPECT_EQ(failed_checks(), before);
  check_once("test/failed", [] { return compare_all({{torch::ones({2}), torch::zeros({2})}}, 0.01, "x"); });
  EXPECT_EQ(failed_checks(), before + 1);
}

TEST(Micro, KernelTolerancesPerPrecision) {
  // One op's output against its reference. fp32 and tf32 equal the ladder's
  // parity gates; bf16 is looser than the step's 1e-2 gate, because one
  // kernel's error does not average over the model (H100: up to 5.3e-3).
  Switches tf32, bf16;
  tf32.set(switches::tf32, true);
  bf16.set(switches::bf16, true);
  EXPECT_DOUBLE_EQ(tolerance_for(Precision::kFP32), parity_rtol(Switches{}));
  EXPECT_DOUBLE_EQ(tolerance_for(Precision::kTF32), parity_rtol(tf32));
  EXPECT_DOUBLE_EQ(tolerance_for(Precision::kBF16), 2e-2);
  EXPECT_GT(tolerance_for(Precision::kBF16), parity_rtol(bf16));
}

TEST(Micro, DdpBucketsCoverEveryParameterOnceAndReachDdpsLimits) {
  ModelConfig m;  // 8 layers of 12.6 MB (C = 512): several 25 MiB buckets
  m.n_layer = 8;
  m.n_head = 8;
  m.n_embd = 512;
  m.block_size = 64;
  m.vocab_size = 1000;
  const auto& params = gpt_parameter_shapes(m);
  int64_t total = 0, largest_tensor = 0;
  for (const auto& p : params) {
    total += p.numel() * 4;
    largest_tensor = std::max<int64_t>(largest_tensor, p.numel() * 4);
  }
  const std::vector<int64_t> buckets = ddp_bucket_bytes(params);
  ASSERT_GE(buckets.size(), 3u);
  EXPECT_EQ(std::accumulate(buckets.begin(), buckets.end(), int64_t{0}), total);
  // c10d closes a bucket once it reaches its limit: every bucket but the last
  // reached 1 MiB (the first) or 25 MiB (the others).
  EXPECT_GE(buckets.front(), 1 << 20);
  for (size_t i = 1; i + 1 < buckets.size(); ++i) EXPECT_GE(buckets[i], 25 << 20) << i;
  EXPECT_GE(*std::max_element(buckets.begin(), buckets.end()), largest_tensor);
}

TEST(Micro, RepresentativeBucketsAreSmallestMedianLargest) {
  EXPECT_EQ(representative_buckets({5, 1, 9, 3, 7}), (std::vector<int64_t>{1, 5, 9}));
  EXPECT_EQ(representative_buckets({4, 4}), (std::vector<int64_t>{4}));
  EXPECT_TRUE(representative_buckets({}).empty());
}

}  // namespace
}  // namespace ladder::micro
