// tests/variants/test_cast_cache.cpp: CastCache (variants/ops/cast_cache.h), the fused ops
// reading it (variants/fused_linear/fused_linear.h), and the cast-cache part of the step:
// its copies are exactly the casts, never handed out stale, read by every
// micro-step and refreshed once per optimizer step, and the step's numbers are
// the same bit for bit with it and without it.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/support/tiny_step.h"
#include "variants/ops/cast_cache.h"
#include "variants/fused_linear/fused_linear.h"
#include "variants/config/precision.h"

namespace ladder {
namespace {

TEST(CastCache, CopiesAreTheCastsAndNeverStale) {
  torch::manual_seed(0);
  auto w = torch::randn({48, 32}).requires_grad_();  // (O, I)
  auto b = torch::randn({48}).requires_grad_();      // (O)
  const auto steps = torch::arange(5);               // int64: nothing to cast
  const auto already = torch::randn({4}, torch::kBFloat16);
  CastCache cache(torch::kBFloat16);
  cache.track({w, b, steps, already, w});  // w twice: tracked once
  auto s = cache.stats();
  EXPECT_EQ(s.parameters, 2);
  EXPECT_EQ(s.elements, 48 * 32 + 48);
  EXPECT_EQ(s.bytes, 2 * (48 * 32 + 48));
  EXPECT_EQ(s.refreshes, 1);  // track made them

  const auto copy = cache.find(w, torch::kBFloat16);
  ASSERT_TRUE(copy.defined());
  EXPECT_TRUE(torch::equal(copy, w.detach().to(torch::kBFloat16)));
  EXPECT_TRUE(copy.is_contiguous());
  EXPECT_FALSE(copy.requires_grad());
  EXPECT_FALSE(cache.find(w, torch::kHalf).defined()) << "a copy in another dtype than asked";
  EXPECT_FALSE(cache.find(torch::randn({48, 32}), torch::kBFloat16).defined()) << "an untracked tensor";
  EXPECT_FALSE(cache.find(steps, torch::kBFloat16).defined());

  // Changed in place since the refresh: never handed out, counted stale.
  {
    torch::NoGradGuard no_grad;
    w.add_(1.0);
  }
  EXPECT_FALSE(cache.find(w, torch::kBFloat16).defined());
  EXPECT_TRUE(cache.find(b, torch::kBFloat16).defined()) << "b did not change";
  cache.refresh();
  const auto again = cache.find(w, torch::kBFloat16);
  ASSERT_TRUE(again.defined());
  EXPECT_TRUE(torch::equal(again, w.detach().to(torch::kBFloat16)));
  EXPECT_EQ(again.data_ptr(), copy.data_ptr()) << "a refresh must keep the copy's address (a CUDA graph reads it)";
  s = cache.stats();
  EXPECT_EQ(s.refreshes, 2);
  EXPECT_EQ(s.reads, 3);  // copy, b, again
  EXPECT_EQ(s.stale, 1);
}

// The fused ops read their weight's and bias's copy when it is fresh (a copy
// zeroed behind the cache's back shows in the output), and cast themselves
// when the parameter changed since the refresh.
TEST(CastCache, FusedOpsReadFreshCopiesAndCastStaleOnes) {
  torch::manual_seed(1);
  const auto x = torch::randn({6, 16});                  // (N, I)
  auto w = (0.1 * torch::randn({24, 16})).requires_grad_();  // (O, I)
  auto b = torch::randn({24}).requires_grad_();              // (O)
  auto cache = std::make_shared<CastCache>(torch::kBFloat16);
  cache->track({w, b});
  fused::LinearOptions with;
  with.casts = cache;
  const AutocastScope bf16(true, torch::kCPU);
  const auto plain = fused::linear_bias(x, w, b);  // casts its own
  EXPECT_TRUE(torch::equal(fused::linear_bias(x, w, b, with), plain)) << "the same rounding either way";
  EXPECT_EQ(cache->stats().reads, 2);

  cache->find(w, torch::kBFloat16).zero_();  // the op must be reading this copy
  const auto from_copy = fused::linear_bias(x, w, b, with);
  EXPECT_TRUE(torch::equal(from_copy, b.detach().to(torch::kBFloat16).expand({6, 24})))
      << "with w's copy zeroed the output is the bias alone";

  {
    torch::NoGradGuard no_grad;
    w.mul_(2.0);  // stale now
  }
  const auto stale_before = cache->stats().stale;
  EXPECT_TRUE(torch::equal(fused::linear_bias(x, w, b, with), fused::linear_bias(x, w, b)));
  EXPECT_EQ(cache->stats().stale, stale_before + 1);
}

// After the steps ran, every copy the fused ops would read is the cast of
// its parameter as it is now (a refresh that did not run, or ran before the
// update, leaves a copy behind its parameter).
void expect_copies_fresh(TrainStep& step) {
  const auto& casts = step.model()->options().linear.casts;
  ASSERT_TRUE(casts);
  const auto params = step.model()->fused_cast_parameters();
  ASSERT_FALSE(params.empty());
  for (size_t i = 0; i < params.size(); ++i) {
    const auto copy = casts->find(params[i], torch::kBFloat16);
    ASSERT_TRUE(copy.defined()) << "parameter " << i << " was changed after the last refresh";
    EXPECT_TRUE(torch::equal(copy, params[i].detach().to(torch::kBFloat16))) << "parameter " << i;
  }
}

// The part in the step: grad-accum with bf16 on a CPU (forced: its bf16 may
// be emulated), two micro-steps. Every micro-step reads every copy, the step
// refreshes them once after its update, and the losses and gradient norms are
// those of the same rung without the part, to the bit.
TEST(CastCache, StepReadsEachCopyEveryMicroStepAndRefreshesOncePerStep) {
  const auto bf16_accum = [](RunConfig& c) {
    c.cpu_bf16 = "on";
    c.total_batch = 2 * c.batch * c.seq;  // two micro-steps
  };
  auto with = tiny_cpu_step("top", bf16_accum);
  auto without = tiny_cpu_step("top-cast-cache", bf16_accum);
  ASSERT_TRUE(with->plan().acts(switches::cast_cache));
  ASSERT_FALSE(without->plan().acts(switches::cast_cache));
  PhaseObserver none;
  const int64_t steps = 3;
  for (int64_t step = 0; step < steps; ++step) {
    const auto a = with->run(step, none), b = without->run(step, none);
    EXPECT_EQ(a.loss.item<float>(), b.loss.item<float>()) << "step " << step;
    EXPECT_EQ(a.grad_norm.item<float>(), b.grad_norm.item<float>()) << "step " << step;
  }
  const SwitchEffect sw = with->describe_switches().at("cast-cache");
  ASSERT_TRUE(sw.effective.value()) << dump(sw);
  const CastCacheFacts cc = sw.cast_cache.value();
  const int64_t n_layer = with->model()->config().n_layer;
  const int64_t params = n_layer * 8 + 1;  // 4 linears' weight and bias per block, and the lm_head (wte)
  EXPECT_EQ(cc.parameters, params);
  EXPECT_EQ(cc.reads, params * 2 * steps) << "every micro-step reads every copy";
  EXPECT_EQ(cc.refreshes, steps + 1) << "once when the step was built, once per update";
  EXPECT_EQ(cc.cast_afresh, 0);
  const SwitchEffect fused = with->describe_switches().at("fused");
  const auto fusions = fused.fusions_active.value();
  EXPECT_NE(std::find(fusions.begin(), fusions.end(), "weight_casts_once_per_step"), fusions.end()) << dump(fused);
  expect_copies_fresh(*with);
}

// On a GPU the top rung replays CUDA graphs, whose last one updates the
// weights and refreshes the copies on the device without the host: after
// three steps (two of them replays) every copy must still be its parameter's
// cast.
TEST(CastCache, CudaGraphedStepsLeaveFreshCopies) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  auto step = tiny_step("top", "cuda", [](RunConfig& c) { c.total_batch = 2 * c.batch * c.seq; });
  PhaseObserver none;
  for (int64_t i = 0; i < 3; ++i) step->run(i, none);
  torch::cuda::synchronize();
  EXPECT_TRUE(step->uses_graph());
  expect_copies_fresh(*step);
  const SwitchEffect sw = step->describe_switches().at("cast-cache");
  EXPECT_EQ(sw.cast_cache.value().cast_afresh, 0) << dump(sw);
}

// Where bf16 stands down (a CPU left in fp32), the part has nothing to cast:
// not applicable, with why, and no cache.
TEST(CastCache, StandsDownWithoutBf16) {
  auto step = tiny_cpu_step("top", [](RunConfig& c) { c.cpu_bf16 = "off"; });
  EXPECT_FALSE(step->plan().acts(switches::cast_cache));
  ASSERT_EQ(step->plan().stood_down.count("cast-cache"), 1u);
  EXPECT_NE(step->plan().stood_down.at("cast-cache").find("bf16 stands down"), std::string::npos)
      << step->plan().stood_down.at("cast-cache");
  const SwitchEffect sw = step->describe_switches().at("cast-cache");
  EXPECT_FALSE(sw.applicable.value()) << dump(sw);
}

}  // namespace
}  // namespace ladder
