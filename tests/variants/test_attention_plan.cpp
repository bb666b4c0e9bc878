// tests/variants/test_attention_plan.cpp: the attention planner (variants/planners/attention_plan.h,
// variants/planners/attention_candidates.h): the choice under a fake timer (never
// slower than PyTorch's own pick plus the margin), the interleaving, the
// plan's JSON, the cache and its key, --attention-plan, the plan a CPU flash
// step records and the backend it applies, and the candidates' agreement at
// GPT-2's attention shape. On a GPU, AttentionPlanCuda.* runs the four
// CUDA backends at the step's shape; they skip without one.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <tuple>
#include <iostream>
#include <vector>

#include <ATen/Context.h>
#include <gtest/gtest.h>

#include "profiler/common/config_error.h"
#include "tests/support/cache_dir.h"
#include "tests/support/tiny_step.h"
#include "variants/ops/attention/attention.h"
#include "variants/config_fields.h"
#include "variants/planners/attention_candidates.h"
#include "variants/planners/attention_plan.h"
#include "variants/planners/plan_common.h"

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
  EXPECT_FALSE(parse_backend("sdpa"));
  EXPECT_FALSE(parse_backend("Flash"));
  EXPECT_EQ(backend_names().size(), std::size(kAttentionBackends));
  EXPECT_EQ(attention_plan_values().front(), "auto");
  // A CPU: PyTorch's pick, flash, math, explicit, flash-fp32; CUDA: PyTorch's pick, flash, cuDNN, efficient.
  const std::vector<std::pair<AttentionBackend, std::pair<bool, bool>>> on{
      {AttentionBackend::kPytorch, {true, true}},  {AttentionBackend::kFlash, {true, true}},
      {AttentionBackend::kCudnn, {false, true}},   {AttentionBackend::kEfficient, {false, true}},
      {AttentionBackend::kMath, {true, false}},    {AttentionBackend::kExplicit, {true, false}},
      {AttentionBackend::kFlashFp32, {true, false}}};
  ASSERT_EQ(on.size(), std::size(kAttentionBackends));
  for (const auto& [b, cpu_cuda] : on) {
    EXPECT_EQ(backend_on_device(b, false), cpu_cuda.first) << backend_name(b);
    EXPECT_EQ(backend_on_device(b, true), cpu_cuda.second) << backend_name(b);
  }
  EXPECT_STREQ(backend_device_only(AttentionBackend::kCudnn), "CUDA only");
  EXPECT_STREQ(backend_device_only(AttentionBackend::kExplicit), "CPU only");
  EXPECT_EQ(attention::attention_call(AttentionBackend::kExplicit), AttentionCall::kExplicit);
  EXPECT_EQ(attention::attention_call(AttentionBackend::kFlashFp32), AttentionCall::kSdpaFp32);
  EXPECT_EQ(attention::attention_call(AttentionBackend::kMath), AttentionCall::kSdpa);
}

TEST(AttentionPlan, RequestTakesAutoOrABackend) {
  for (const char* ok : {"auto", "pytorch", "flash", "cudnn", "efficient"})
    EXPECT_NO_THROW(check_attention_plan_request(ok)) << ok;
  for (const char* ok : {"auto", "pytorch", "flash", "math", "explicit", "flash-fp32"})
    EXPECT_NO_THROW(check_attention_plan_request(ok, "cpu")) << ok;
  try {
    check_attention_plan_request("fa3");
    FAIL() << "fa3 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--attention-plan: got \"fa3\"; expected auto, pytorch, flash, cudnn, "
                                         "efficient, math, explicit or flash-fp32"),
              std::string::npos)
        << e.what();
  }
  try {
    check_attention_plan_request("explicit", "cuda:0");
    FAIL() << "explicit accepted on CUDA";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--attention-plan: explicit is a CPU backend and --device is cuda:0; expected "
                                         "auto, pytorch, flash, cudnn or efficient there"),
              std::string::npos)
        << e.what();
  }
  RunConfig cfg = config_for("tiny", Overrides{}, "cpu");
  EXPECT_NO_THROW(validate_config(cfg));
  for (const auto& [value, says] : std::vector<std::pair<std::string, std::string>>{
           {"cuDNN", "--attention-plan"},
           {"efficient", "--attention-plan: efficient is a CUDA backend and --device is cpu; expected auto, pytorch, "
                         "flash, math, explicit or flash-fp32 there"}}) {
    cfg.attention_plan = value;
    try {
      validate_config(cfg);
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
    for (const auto& c : p.candidates) {
      EXPECT_EQ(c.ms.size(), c.ran ? 10u : 0u) << c.backend;
      // Every candidate that ran says why it lost, or that it was chosen; one that did not, nothing.
      ASSERT_EQ(c.verdict.has_value(), c.ran) << c.backend;
      if (!c.ran) continue;
      if (c.backend == p.choice)
        EXPECT_EQ(*c.verdict, "chosen");
      else if (p.choice == "pytorch" && c.median_ms < p.candidates[0].median_ms)
        EXPECT_EQ(c.verdict->rfind("within the margin: ", 0), 0u) << *c.verdict;
      else
        EXPECT_EQ(c.verdict->rfind("slower: ", 0), 0u) << *c.verdict;
    }
    EXPECT_EQ(p.mode, "auto");
    EXPECT_EQ(p.source, "measured");
    EXPECT_EQ(p.reps, 10);
  }
}

// A CPU plan's cut: a candidate whose untimed run takes more than
// kAttentionPlanFirstRunCutCpu times A's is not timed, and says why; at
// first_run_cut 0 (CUDA) it is timed as the others.
TEST(AttentionPlan, SlowFirstRunIsNotTimedOnACpu) {
  for (double cut : {kAttentionPlanFirstRunCutCpu, 0.0}) {
    double now = 0;
    int explicit_calls = 0;
    std::vector<RunnableAttention> cands;
    for (const auto& [backend, true_ms] : {std::pair{AttentionBackend::kPytorch, 2.0},
                                           std::pair{AttentionBackend::kMath, 1.0},
                                           std::pair{AttentionBackend::kExplicit, 9.0}}) {
      const AttentionBackend b = backend;  // a lambda captures a variable, not a structured binding (C++17)
      const double ms = true_ms;
      RunnableAttention rc;
      rc.result.backend = backend_name(b);
      rc.result.ran = true;
      rc.run = [&, b, ms] {
        now = ms;
        explicit_calls += b == AttentionBackend::kExplicit;
      };
      cands.push_back(std::move(rc));
    }
    const AttentionPlan p = measure_attention_plan(
        cands, gpt2_key(),
        [&](const std::function<void()>& fn) {
          fn();
          return now;
        },
        kAttentionPlanMarginCpu, 5, cut);
    EXPECT_EQ(p.choice, "math") << p.reason;
    EXPECT_EQ(*p.candidates[0].verdict, "slower: 2.0000 ms, 2.00x math's 1.0000 ms");
    const AttentionCandidate& ex = p.candidates[2];
    if (cut > 0) {
      EXPECT_FALSE(ex.ran);
      EXPECT_EQ(ex.why_not, "not timed: its untimed run took 9.0 ms, 4.5x pytorch's 2.0 ms (more than 4x)");
      EXPECT_EQ(explicit_calls, 1) << "its untimed run only";
      EXPECT_TRUE(ex.ms.empty());
      EXPECT_FALSE(ex.verdict);
    } else {
      EXPECT_TRUE(ex.ran);
      EXPECT_EQ(explicit_calls, 6);
      EXPECT_EQ(*ex.verdict, "slower: 9.0000 ms, 9.00x math's 1.0000 ms");
    }
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
           [](AttentionPlanKey& k) { k.dtype = "fp32"; },
           [](AttentionPlanKey& k) { k.planner = kAttentionPlannerVersion + 1; }}) {
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

// The flash rung on a CPU plans its attention: PyTorch's pick, flash, math,
// explicit and (in bf16, as a unit test's step runs with --cpu-bf16 auto and
// no roofline) flash-fp32 measured, each unless its untimed run was past the
// cut; in fp32 flash-fp32 is not run; cuDNN and memory-efficient are named as
// CUDA's; the next step of the same shape reads the cache; a rung without
// SDPA has no plan.
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
  ASSERT_EQ(p.candidates.size(), 7u);
  EXPECT_EQ(p.key.dtype, "bf16");
  EXPECT_EQ(p.candidates[0].picks, "flash") << "SDPA's CPU kernel at tiny's shape";
  for (size_t i : {0, 1, 4, 5, 6}) {
    const AttentionCandidate& c = p.candidates[i];
    if (i > 0 && !c.ran) {
      EXPECT_EQ(c.why_not.rfind("not timed: ", 0), 0u) << c.why_not;
      continue;
    }
    EXPECT_TRUE(c.ran) << c.backend << ": " << c.why_not;
    EXPECT_EQ(c.ms.size(), size_t(kAttentionPlanReps));
    EXPECT_TRUE(c.verdict) << c.backend;
  }
  EXPECT_EQ(p.candidates[4].picks, "math");
  EXPECT_EQ(p.candidates[5].picks, "explicit");
  for (size_t i = 2; i < 4; ++i) EXPECT_EQ(p.candidates[i].why_not, "CUDA only") << p.candidates[i].backend;
  EXPECT_EQ(p.candidates[6].picks, "flash");
  const auto chosen = std::find_if(p.candidates.begin(), p.candidates.end(),
                                   [&](const AttentionCandidate& c) { return c.backend == p.choice; });
  ASSERT_NE(chosen, p.candidates.end());
  EXPECT_EQ(chosen->verdict, "chosen");
  EXPECT_EQ(tiny_cpu_step("flash")->attention_plan()->source.rfind("cache: ", 0), 0u);
  const auto fp32 = tiny_cpu_step("flash", [](RunConfig& c) { c.cpu_bf16 = "off"; });
  const AttentionPlan& f = *fp32->attention_plan();
  EXPECT_EQ(f.key.dtype, "fp32");
  EXPECT_EQ(f.source, "measured") << "another dtype, another key";
  EXPECT_EQ(f.candidates[6].why_not, "the attention is fp32 already: flash's kernel, as candidate flash");
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
// Read and set through the per-backend API only (variants/config/precision.h).
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
  ASSERT_EQ(cands.size(), 7u);
  for (size_t i : {0, 1, 4, 5})
    EXPECT_TRUE(cands[i].result.ran) << cands[i].result.backend << ": " << cands[i].result.why_not;
}

// In bf16, at GPT-2's head width and count (T 128, so that emulated bf16
// stays quick): math, explicit and flash on fp32 copies agree with the bf16
// flash kernel within bf16's tolerance, each of y, dq, dk and dv.
TEST(AttentionPlan, CpuCandidatesAgreeInBf16) {
  AttentionPlanKey k = gpt2_key();
  k.batch = 1;
  k.seq = 128;
  const auto cands = attention::candidates(k, torch::Device("cpu"), torch::kBFloat16);
  ASSERT_EQ(cands.size(), 7u);
  for (size_t i : {0, 1, 4, 5, 6})
    EXPECT_TRUE(cands[i].result.ran) << cands[i].result.backend << ": " << cands[i].result.why_not;
  EXPECT_EQ(cands[6].result.picks, "flash");
}

// The explicit candidate on a CPU is one autograd node
// (fused_explicit_causal_attention) with its backward written out. It
// matches the composite it replaces: y, dq, dk and dv in fp32 within 1e-5
// relative at GPT-2's head width and count, T 1024, and at an odd T (lanes
// left over); in bf16 within the composite's own distance from fp32 plus
// bf16's rounding. Inputs it does not take are refused with what it expects.
TEST(AttentionPlan, ExplicitCandidateIsOneNodeMatchingTheComposite) {
  auto compare = [](int64_t B, int64_t nh, int64_t T, int64_t hs, torch::ScalarType dt) {
    torch::manual_seed(7);
    auto q32 = torch::randn({B, nh, T, hs}), k32 = torch::randn({B, nh, T, hs}), v32 = torch::randn({B, nh, T, hs});
    auto dy = torch::randn({B, nh, T, hs});
    const auto mask = torch::ones({T, T}, torch::kBool).tril();
    auto run = [&](bool fused, torch::ScalarType d) {
      auto leaf = [d](const torch::Tensor& t) { return t.to(d, /*non_blocking=*/false, /*copy=*/true).requires_grad_(); };
      auto q = leaf(q32), k = leaf(k32), v = leaf(v32);
      auto y = fused ? fused_explicit_causal_attention(q, k, v) : explicit_causal_attention(q, k, v, mask);
      if (fused) {
        EXPECT_NE(y.grad_fn()->name().find("ExplicitAttentionFunction"), std::string::npos);
      }
      y.backward(dy.to(d));
      return std::vector<torch::Tensor>{y.to(torch::kFloat), q.grad().to(torch::kFloat), k.grad().to(torch::kFloat),
                                        v.grad().to(torch::kFloat)};
    };
    const auto want32 = run(false, torch::kFloat), got = run(true, dt), want = run(false, dt);
    const char* names[] = {"y", "dq", "dk", "dv"};
    for (size_t i = 0; i < 4; ++i) {
      const double scale = want32[i].abs().max().item<double>();
      const double err = (got[i] - want32[i]).abs().max().item<double>() / scale;
      if (dt == torch::kFloat) {
        EXPECT_LT(err, 1e-5) << names[i] << " T " << T;
      } else {  // no further from fp32 than the bf16 composite is, with bf16's rounding to spare
        const double composite = (want[i] - want32[i]).abs().max().item<double>() / scale;
        EXPECT_LT(err, composite + 8e-3) << names[i] << " T " << T << " (composite " << composite << ")";
      }
    }
  };
  compare(1, 12, 1024, 64, torch::kFloat);
  compare(2, 3, 37, 16, torch::kFloat);
  compare(2, 3, 37, 16, torch::kBFloat16);
  compare(1, 12, 256, 64, torch::kBFloat16);
  const auto q = torch::randn({1, 2, 8, 4});
  EXPECT_FALSE(fused_explicit_attention_runs(q, q, q.to(torch::kBFloat16)));
  EXPECT_FALSE(fused_explicit_attention_runs(q.to(torch::kDouble), q.to(torch::kDouble), q.to(torch::kDouble)));
  try {
    fused_explicit_causal_attention(q, q, q.to(torch::kBFloat16));
    ADD_FAILURE() << "mixed dtypes were taken";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("all float32 or all bfloat16"), std::string::npos) << e.what();
  }
}

// Each CPU candidate pinned on the flash rung runs in the step: the loss of
// a step that calls explicit attention, SDPA's math backend or flash on fp32
// copies is flash's within fp32's rounding (--cpu-bf16 off) or bf16's (on),
// the switches are the pinned backend's, and the flash switch's effect says
// what ran.
TEST(AttentionPlan, PinnedCpuCandidatesRunInTheStep) {
  for (const char* bf16 : {"off", "on"}) {
  const double rtol = std::string(bf16) == "on" ? 2e-3 : 1e-5;
  auto loss_of = [bf16](const char* plan) {
    auto step = tiny_cpu_step("flash", [plan, bf16](RunConfig& c) {
      c.attention_plan = plan;
      c.cpu_bf16 = bf16;
    });
    PhaseObserver none;
    const double loss = step->run(0, none).loss.item<double>();
    const SwitchEffect effect = step->describe_switches().at("flash");
    const auto& ctx = at::globalContext();
    return std::tuple{loss, effect, ctx.userEnabledMathSDP(), ctx.userEnabledFlashSDP()};
  };
  const auto [flash, flash_effect, flash_math, flash_flash] = loss_of("flash");
  EXPECT_TRUE(flash_flash && !flash_math);
  for (const char* plan : {"math", "explicit", "flash-fp32"}) {
    const auto [loss, effect, math_on, flash_on] = loss_of(plan);
    EXPECT_NEAR(loss, flash, rtol * std::abs(flash)) << plan << ", --cpu-bf16 " << bf16;
    const std::string why = effect.reason;
    if (std::string(plan) == "explicit") {
      EXPECT_FALSE(effect.effective.value()) << dump(effect);
      EXPECT_FALSE(effect.applicable.value()) << "measured, not failed: " << dump(effect);
      EXPECT_EQ(why, "the attention plan chose the explicit attention: --attention-plan explicit") << dump(effect);
    } else {
      EXPECT_TRUE(effect.effective.value()) << dump(effect);
      EXPECT_EQ(math_on, std::string(plan) == "math") << plan;
      EXPECT_EQ(flash_on, std::string(plan) == "flash-fp32") << plan;
      EXPECT_NE(why.find("(the attention plan's choice: --attention-plan " + std::string(plan) + ")"),
                std::string::npos)
          << dump(effect);
    }
  }
  }
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
  ASSERT_EQ(cands.size(), 7u);
  for (size_t i = 4; i < 7; ++i) EXPECT_EQ(cands[i].result.why_not, "CPU only") << cands[i].result.backend;
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
