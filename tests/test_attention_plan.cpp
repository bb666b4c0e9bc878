// tests/test_attention_plan.cpp: the attention planner (variants/attention_plan.h,
// variants/attention_candidates.h): the choice under a fake timer (never
// slower than PyTorch's own pick plus the margin), the interleaving, the
// plan's JSON, the cache and its key, --attention-plan, the plan a CPU flash
// step records and the backend it applies, and the candidates' agreement at
// GPT-2's attention shape. On a GPU, AttentionPlanCuda.* runs the four
// backends at the step's shape; they skip without one.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <iostream>
#include <vector>

#include <ATen/Context.h>
#include <gtest/gtest.h>

#include "profiler/common/config_error.h"
#include "tests/cache_dir.h"
#include "tests/tiny_step.h"
#include "variants/attention_candidates.h"
#include "variants/attention_plan.h"
#include "variants/plan_common.h"

namespace ladder {
namespace {

AttentionPlanKey gpt2_key() {
  AttentionPlanKey k;
  k.device = "NVIDIA H100 80GB HBM3";
  k.torch = "2.11.0";
  k.cudnn = "91002";
  k.dtype = "bf16";
  k.batch = 16;
  k.n_head = 12;
  k.seq = 1024;
  k.head_size = 64;
  return k;
}

TEST(AttentionPlan, BackendNamesRoundTrip) {
  for (AttentionBackend b : kAttentionBackends) EXPECT_EQ(parse_backend(backend_name(b)), b);
  EXPECT_FALSE(parse_backend("math"));
  EXPECT_FALSE(parse_backend("Flash"));
  EXPECT_TRUE(backend_on_device(AttentionBackend::kFlash, false));
  EXPECT_FALSE(backend_on_device(AttentionBackend::kCudnn, false));
  EXPECT_FALSE(backend_on_device(AttentionBackend::kEfficient, false));
  for (AttentionBackend b : kAttentionBackends) EXPECT_TRUE(backend_on_device(b, true));
}

TEST(AttentionPlan, RequestTakesAutoOrABackend) {
  for (const char* ok : {"auto", "pytorch", "flash", "cudnn", "efficient"})
    EXPECT_NO_THROW(check_attention_plan_request(ok)) << ok;
  try {
    check_attention_plan_request("fa3");
    FAIL() << "fa3 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--attention-plan: got \"fa3\"; expected auto, pytorch"), std::string::npos)
        << e.what();
  }
  RunConfig cfg = config_for("tiny", Overrides{}, "cpu");
  EXPECT_NO_THROW(cfg.validate());
  for (const auto& [value, says] : std::vector<std::pair<std::string, std::string>>{
           {"cuDNN", "--attention-plan"},
           {"efficient", "--attention-plan: efficient is a CUDA backend and --device is cpu; expected auto, pytorch "
                         "or flash there"}}) {
    cfg.attention_plan = value;
    try {
      cfg.validate();
      FAIL() << value << " accepted on a CPU";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
}

// A fake device: each backend has a true time, every timing adds up to 3 %
// noise, and the timer sees only what the candidate's call set. Over 40
// seeds the choice is never slower than PyTorch's pick less the margin, each
// candidate that ran is run once untimed and then `reps` times, in rotated
// order, and one that did not run is never called.
TEST(AttentionPlan, MeasuredPlanUnderAFakeTimer) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> speed(0.8, 1.2), noise(0.97, 1.03);
    double now_true = 0;
    std::vector<std::string> calls;
    std::vector<RunnableAttention> cands;
    double truth[4] = {1.0, speed(rng), speed(rng), speed(rng)};
    for (int i = 0; i < 4; ++i) {
      RunnableAttention rc;
      rc.result.backend = backend_name(kAttentionBackends[i]);
      rc.result.ran = i != 3 || seed % 2 == 0;  // efficient cannot run at odd seeds
      if (!rc.result.ran) rc.result.why_not = "cannot run here: No available kernel";
      rc.run = [&, i] {
        now_true = truth[i];
        calls.push_back(backend_name(kAttentionBackends[i]));
      };
      cands.push_back(std::move(rc));
    }
    const AttentionTimer timer = [&](const std::function<void()>& fn) {
      fn();
      return now_true * noise(rng);
    };
    const AttentionPlan p = measure_attention_plan(cands, gpt2_key(), timer, kAttentionPlanMargin, 10);
    ASSERT_EQ(p.candidates.size(), 4u);
    const size_t n_ran = seed % 2 == 0 ? 4 : 3;
    EXPECT_EQ(calls.size(), n_ran * 11) << "one untimed call and 10 timed ones each";
    EXPECT_EQ(std::count(calls.begin(), calls.end(), "efficient"), seed % 2 == 0 ? 11 : 0);
    // Repetition r starts at the r-th candidate that ran.
    for (size_t r = 0; r < 3; ++r) EXPECT_EQ(calls[n_ran + r * n_ran], p.candidates[r].backend) << seed;
    const auto chosen = std::find_if(p.candidates.begin(), p.candidates.end(),
                                     [&](const AttentionCandidate& c) { return c.backend == p.choice; });
    ASSERT_NE(chosen, p.candidates.end());
    EXPECT_TRUE(chosen->ran);
    EXPECT_LE(chosen->median_ms, p.candidates[0].median_ms) << p.reason;
    if (p.choice != "pytorch") {
      EXPECT_LT(chosen->median_ms, p.candidates[0].median_ms * (1 - kAttentionPlanMargin)) << p.reason;
    }
    for (const auto& c : p.candidates) EXPECT_EQ(c.ms.size(), c.ran ? 10u : 0u) << c.backend;
    EXPECT_EQ(p.mode, "auto");
    EXPECT_EQ(p.source, "measured");
    EXPECT_EQ(p.reps, 10);
  }
}

AttentionCandidate timed(const char* backend, double median, bool ran = true) {
  AttentionCandidate c;
  c.backend = backend;
  c.ran = ran;
  c.median_ms = median;
  return c;
}

TEST(AttentionPlan, ChoiceKeepsPytorchUnlessFasterByTheMargin) {
  std::string why;
  EXPECT_EQ(choose_fastest(std::vector{timed("pytorch", 4.0), timed("flash", 3.95)}, 0.03, &why,
                           [](const AttentionCandidate& c) { return c.backend; }),
            0u);
  EXPECT_EQ(why, "flash not chosen, within the margin: 3.9500 ms against pytorch's 4.0000 ms (-1.2 %, margin 3 %)");
  EXPECT_EQ(choose_fastest(std::vector{timed("pytorch", 4.0), timed("flash", 3.5), timed("cudnn", 1.0, false)}, 0.03,
                           &why, [](const AttentionCandidate& c) { return c.backend; }),
            1u)
      << "a candidate that did not run is never chosen, whatever its figure";
  EXPECT_EQ(why, "flash chosen: 3.5000 ms against pytorch's 4.0000 ms (-12.5 %, margin 3 %)");
}

TEST(AttentionPlan, JsonRoundTripsAndIsStrict) {
  AttentionPlan p = pinned_attention_plan(gpt2_key(), AttentionBackend::kCudnn);
  EXPECT_EQ(p.choice, "cudnn");
  EXPECT_EQ(p.backend(), AttentionBackend::kCudnn);
  p.candidates = {timed("pytorch", 4.0), timed("efficient", 0, false)};
  p.candidates[0].ms = {4.1, 3.9};
  p.candidates[1].why_not = "cannot run here";
  const nlohmann::json j = fields::to_json(p);
  EXPECT_EQ(fields::to_json(fields::from_json<AttentionPlan>(j, "plan")), j);
  nlohmann::json bad = j;
  bad["choice"] = "fa3";
  try {
    fields::from_json<AttentionPlan>(bad, "plan.json");
    FAIL() << "fa3 read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("plan.json.choice"), std::string::npos) << e.what();
  }
  bad = j;
  bad["key"].erase("seq");
  EXPECT_THROW(fields::from_json<AttentionPlan>(bad, "plan.json"), ConfigError);
}

TEST(AttentionPlan, CacheKeepsAPlanPerKey) {
  CacheDir cache;
  AttentionPlan p = pinned_attention_plan(gpt2_key(), AttentionBackend::kFlash);
  p.mode = "auto";
  p.source = "measured";
  save_cached_attention_plan(p);
  const auto back = load_cached_attention_plan(gpt2_key());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->choice, "flash");
  EXPECT_EQ(back->source, "cache: " + (cache.dir / "attention-plans" / (gpt2_key().id() + ".json")).string());
  for (auto change : std::vector<std::function<void(AttentionPlanKey&)>>{
           [](AttentionPlanKey& k) { k.seq = 512; }, [](AttentionPlanKey& k) { k.cudnn = "91100"; },
           [](AttentionPlanKey& k) { k.dtype = "fp32"; }, [](AttentionPlanKey& k) { k.planner = 2; }}) {
    AttentionPlanKey other = gpt2_key();
    change(other);
    EXPECT_NE(other.id(), gpt2_key().id());
    EXPECT_FALSE(load_cached_attention_plan(other));
  }
  std::ofstream(cache.dir / "attention-plans" / (gpt2_key().id() + ".json")) << "{\"mode\": ";
  EXPECT_FALSE(load_cached_attention_plan(gpt2_key())) << "a damaged entry is measured again";
}

bool only_flash_enabled() {
  const auto& c = at::globalContext();
  return c.userEnabledFlashSDP() && !c.userEnabledMathSDP() && !c.userEnabledMemEfficientSDP() &&
         !c.userEnabledCuDNNSDP();
}

// The flash rung on a CPU plans its attention: PyTorch's pick and flash
// measured, cuDNN and memory-efficient named as CUDA's; the next step of the
// same shape reads the cache; a rung without SDPA has no plan.
TEST(AttentionPlan, CpuFlashStepMeasuresThenReadsTheCache) {
  CacheDir cache;
  auto step = tiny_cpu_step("flash");
  ASSERT_TRUE(step->attention_plan());
  const AttentionPlan& p = *step->attention_plan();
  EXPECT_EQ(p.mode, "auto");
  EXPECT_EQ(p.source, "measured");
  EXPECT_EQ(p.margin, kAttentionPlanMarginCpu);
  EXPECT_EQ(p.key.device.rfind("cpu: ", 0), 0u) << p.key.device;
  EXPECT_EQ(p.key.cudnn, "");
  ASSERT_EQ(p.candidates.size(), 4u);
  EXPECT_EQ(p.candidates[0].picks, "flash") << "SDPA's CPU kernel at tiny's shape";
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(p.candidates[i].ran) << p.candidates[i].why_not;
    EXPECT_EQ(p.candidates[i].ms.size(), size_t(kAttentionPlanReps));
  }
  for (size_t i = 2; i < 4; ++i) EXPECT_EQ(p.candidates[i].why_not, "CUDA only") << p.candidates[i].backend;
  EXPECT_TRUE(p.choice == "pytorch" || p.choice == "flash") << p.choice;
  EXPECT_EQ(tiny_cpu_step("flash")->attention_plan()->source.rfind("cache: ", 0), 0u);
  EXPECT_FALSE(tiny_cpu_step("fused")->attention_plan()) << "explicit attention: no SDPA to plan";
}

TEST(AttentionPlan, PinnedBackendIsAppliedWhileTheStepLives) {
  ASSERT_TRUE(at::globalContext().userEnabledMathSDP());
  {
    auto flash = tiny_cpu_step("flash", [](RunConfig& c) { c.attention_plan = "flash"; });
    EXPECT_EQ(flash->attention_plan()->source, "pinned");
    EXPECT_TRUE(flash->attention_plan()->candidates.empty());
    EXPECT_TRUE(only_flash_enabled());
    PhaseObserver none;
    EXPECT_TRUE(std::isfinite(flash->run(0, none).loss.item<double>()));
  }
  EXPECT_TRUE(at::globalContext().userEnabledMathSDP() && at::globalContext().userEnabledCuDNNSDP())
      << "the step's switches end with it: a later SDPA (a CPU test's) has every backend again";
  try {
    tiny_cpu_step("flash", [](RunConfig& c) { c.attention_plan = "cudnn"; });
    FAIL() << "cudnn pinned on a CPU";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--attention-plan: cudnn is a CUDA backend and --device is cpu"),
              std::string::npos)
        << e.what();
  }
}

// tf32's matmul precision, like the attention plan's switches, lasts as long as the step that set it.
// Read and set through the per-backend API only (variants/precision.h).
TEST(AttentionPlan, StepPutsThePrecisionBack) {
  auto& ctx = at::globalContext();
  const auto cuda = at::Float32Backend::CUDA, mkldnn = at::Float32Backend::MKLDNN;
  const auto matmul = at::Float32Op::MATMUL;
  ctx.setFloat32Precision(cuda, matmul, at::Float32Precision::TF32);
  ctx.setFloat32Precision(mkldnn, matmul, at::Float32Precision::BF16);
  {
    auto fp32 = tiny_cpu_step("fp32");
    EXPECT_EQ(ctx.float32Precision(cuda, matmul), at::Float32Precision::IEEE) << "fp32 runs full precision";
    EXPECT_EQ(ctx.float32Precision(mkldnn, matmul), at::Float32Precision::NONE) << "fp32 runs full precision";
  }
  EXPECT_EQ(ctx.float32Precision(cuda, matmul), at::Float32Precision::TF32);
  EXPECT_EQ(ctx.float32Precision(mkldnn, matmul), at::Float32Precision::BF16);
  ctx.setFloat32Precision(cuda, matmul, at::Float32Precision::IEEE);
  ctx.setFloat32Precision(mkldnn, matmul, at::Float32Precision::NONE);
}

// Each candidate that runs agrees with PyTorch's pick on y, dq, dk and dv at
// GPT-2's attention widths (12 heads of 64, T 1024), in fp32 on a CPU.
TEST(AttentionPlan, CpuCandidatesAgreeAtGpt2Widths) {
  AttentionPlanKey k = gpt2_key();
  k.batch = 1;
  k.dtype = "fp32";
  const auto cands = attention::candidates(k, torch::Device("cpu"), torch::kFloat);
  ASSERT_EQ(cands.size(), 4u);
  EXPECT_TRUE(cands[0].result.ran);
  EXPECT_TRUE(cands[1].result.ran) << cands[1].result.why_not;
}

bool have_cuda() { return torch::cuda::is_available(); }

// On a GPU: every backend at gpt2-124m's step shape (B16, 12 heads of 64,
// T 1024, bf16) runs and agrees with PyTorch's pick, or says why not; the
// measured plan's choice ran.
TEST(AttentionPlanCuda, BackendsAtTheStepShape) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device";
  CacheDir cache;
  AttentionPlanKey k = gpt2_key();
  const auto cands = attention::candidates(k, torch::Device("cuda"), torch::kBFloat16);
  ASSERT_EQ(cands.size(), 4u);
  for (const auto& c : cands)
    std::cout << "  " << c.result.backend << " (" << c.result.picks << "): "
              << (c.result.ran ? "ran" : c.result.why_not) << "\n";
  EXPECT_TRUE(cands[0].result.ran);
  const AttentionPlan p =
      measure_attention_plan(cands, k, [](const std::function<void()>& fn) {
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        torch::cuda::synchronize();
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      }, kAttentionPlanMargin, 3);
  std::cout << "  " << p.reason << "\n";
  EXPECT_NO_THROW(p.backend());
}

}  // namespace
}  // namespace ladder
