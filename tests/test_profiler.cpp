// tests/test_profiler.cpp: the profiler's pieces on CPU. The --profile
// schedule (torch.profiler's semantics, and bad input: exit 2), the category
// table and both breakdowns on hand-made events with exact results, the op
// breakdown of real tiny steps against the harness's own step time, the
// CUPTI record aggregation on synthetic record streams (clock conversion,
// duplicates, the busy <= dt invariant), the CUPTI collector failing
// gracefully without a GPU, and the memory monitor.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "bench/device.h"
#include "bench/matrix.h"
#include "bench/memory_monitor.h"
#include "bench/op_breakdown.h"
#include "profiler/device_steps.h"
#include "profiler/kernel_activity.h"
#include "profiler/op_categories.h"
#include "profiler/schedule.h"
#include "tests/run_ladder.h"
#include "variants/config.h"
#include "variants/rungs.h"
#include "variants/step.h"

namespace {

namespace fs = std::filesystem;
using namespace ladder;
using namespace ladder::profiler;

// ---- schedule ------------------------------------------------------------------

std::string actions(const ProfileSchedule& s, int64_t steps) {
  std::string out;
  for (int64_t i = 0; i < steps; ++i) {
    switch (s.action(i)) {
      case ProfilerAction::kNone: out += '.'; break;
      case ProfilerAction::kWarmup: out += 'w'; break;
      case ProfilerAction::kRecord: out += 'r'; break;
      case ProfilerAction::kRecordAndSave: out += 'S'; break;
    }
  }
  return out;
}

TEST(ProfileSchedule, FollowsTorchProfilerSchedule) {
  // torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1) over 10 steps.
  EXPECT_EQ(actions(parse_schedule("1,1,2", 10), 10), ".wrS......");
  EXPECT_EQ(actions(parse_schedule("1,1,2,2", 10), 10), ".wrS.wrS..");
  EXPECT_EQ(actions(parse_schedule("1,1,2,0", 10), 10), ".wrS.wrS.w");  // repeat 0: until the end
  EXPECT_EQ(actions(parse_schedule("0,0,1,3", 10), 10), "SSS.......");
  EXPECT_EQ(actions(parse_schedule("2,0,3", 5), 5), "..rrS");  // fits exactly
}

TEST(ProfileSchedule, BadSchedulesNameTheFieldAndTheFix) {
  auto message = [](const std::string& spec, int64_t steps) {
    try {
      parse_schedule(spec, steps);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("1,1", 10).find("has 2 field(s)"), std::string::npos);
  EXPECT_NE(message("1,1,1,1,1", 10).find("has 5 field(s)"), std::string::npos);
  EXPECT_NE(message("a,1,1", 10).find("wait is 'a'"), std::string::npos);
  EXPECT_NE(message("1,-1,1", 10).find("warmup is '-1'"), std::string::npos);
  EXPECT_NE(message("1,,1", 10).find("warmup is ''"), std::string::npos);
  EXPECT_NE(message("1,1,0", 10).find("active is 0"), std::string::npos);
  EXPECT_NE(message("1,1,2,x", 10).find("repeat is 'x'"), std::string::npos);
  const std::string late = message("5,5,5", 12);
  EXPECT_NE(late.find("first trace at step 14"), std::string::npos) << late;
  EXPECT_NE(late.find("the run has 12 steps"), std::string::npos) << late;
  for (const auto& spec : {"1,1", "a,1,1", "1,1,0", "5,5,5"})
    EXPECT_EQ(message(spec, 12).rfind("--profile: ", 0), 0u) << spec;
}

// `ladder` exits 2 on a bad --profile, with the message, and writes no report.
TEST(ProfileSchedule, InvalidProfileExitsTwoFromMeasureAndRun) {
  const fs::path dir = fs::temp_directory_path() / "ladder_profile_cli";
  fs::remove_all(dir);
  for (const std::string command : {"measure --device cpu --rung fp32", "run --device cpu --rungs fp32"}) {
    for (const auto& [spec, part] : std::vector<std::pair<std::string, std::string>>{
             {"1,1", "has 2 field(s)"}, {"1,1,0", "active is 0"}, {"x,1,1", "wait is 'x'"},
             {"3,3,3", "the run has 3 steps"}}) {
      const test::Result r = test::run_ladder(command + " --preset tiny --steps 2 --warmup 1 --quiet --out " + dir.string() +
                               " --profile " + spec);
      EXPECT_EQ(r.exit_code, 2) << command << " --profile " << spec << "\n" << r.output;
      EXPECT_NE(r.output.find("--profile: '" + spec + "'"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find(part), std::string::npos) << r.output;
      EXPECT_FALSE(fs::exists(dir / "fp32" / "report.json")) << command << " " << spec;
    }
  }
  fs::remove_all(dir);
}

// ---- categories ----------------------------------------------------------------

TEST(OpCategories, NamesOfOperatorsAndKernels) {
  auto is = [](const char* name, Category c) {
    const auto got = category_of_name(name);
    EXPECT_TRUE(got && *got == c) << name << " -> " << (got ? category_key(*got) : "none");
  };
  is("aten::addmm", Category::kGemm);
  is("aten::mm", Category::kGemm);
  is("MmBackward0", Category::kGemm);
  is("autograd::engine::evaluate_function: AddmmBackward0", Category::kGemm);
  is("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32", Category::kGemm);
  is("aten::_scaled_dot_product_flash_attention_for_cpu", Category::kAttention);
  is("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>>", Category::kAttention);
  is("aten::_softmax", Category::kSoftmaxLoss);
  is("ladder::softmax_cross_entropy", Category::kSoftmaxLoss);
  is("aten::nll_loss_forward", Category::kSoftmaxLoss);
  is("aten::native_layer_norm", Category::kElementwiseNorm);
  is("ladder::add_layer_norm", Category::kElementwiseNorm);
  is("aten::gelu_backward", Category::kElementwiseNorm);
  is("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>", Category::kElementwiseNorm);
  is("aten::_fused_adamw_", Category::kOptimizer);
  is("void at::native::multi_tensor_apply_kernel<...>", Category::kOptimizer);
  is("ncclDevKernel_AllReduce_Sum_f32_RING_LL", Category::kCommunication);
  is("gloo:all_reduce", Category::kCommunication);
  is("aten::copy_", Category::kMemcpyMemset);
  is("aten::zero_", Category::kMemcpyMemset);
  EXPECT_FALSE(category_of_name("aten::embedding"));
  EXPECT_FALSE(category_of_name("aten::empty"));
}

constexpr int64_t kMs = 1000000;  // ns

TEST(OpCategories, HostBreakdownCountsSelfTimeOnceAndSumsToTheSpan) {
  // A 100 ms step:
  //  [0,40) forward range: aten::linear [0,30) > aten::t [0,5), aten::addmm [5,28)
  //                        aten::_softmax [30,38)
  //  [40,50) gap
  //  [50,90) optimizer range: aten::add_ [50,70) (inside: optimizer, not elementwise)
  //  [90,95) aten::embedding (no category: other)
  std::vector<HostEvent> ev = {
      {"forward", 0, 40 * kMs, true},          {"aten::linear", 0, 30 * kMs, false},
      {"aten::t", 0, 5 * kMs, false},          {"aten::addmm", 5 * kMs, 28 * kMs, false},
      {"aten::_softmax", 30 * kMs, 38 * kMs, false}, {"optimizer", 50 * kMs, 90 * kMs, true},
      {"aten::add_", 50 * kMs, 70 * kMs, false},     {"aten::embedding", 90 * kMs, 95 * kMs, false},
      {"outside the step", 100 * kMs, 120 * kMs, false},
  };
  const Breakdown b = host_breakdown(ev, 0, 100 * kMs);
  auto at = [&](Category c) { return b.ms[size_t(c)]; };
  // GEMM: linear's self 2 ms + t 5 ms (attributed to its parent) + addmm 23 ms.
  EXPECT_DOUBLE_EQ(at(Category::kGemm), 30.0);
  EXPECT_DOUBLE_EQ(at(Category::kSoftmaxLoss), 8.0);
  EXPECT_DOUBLE_EQ(at(Category::kOptimizer), 40.0);  // the add_ and the range's own 20 ms
  EXPECT_DOUBLE_EQ(at(Category::kElementwiseNorm), 0.0);
  EXPECT_DOUBLE_EQ(b.idle_ms, 15.0);   // [40,50) and [95,100)
  EXPECT_DOUBLE_EQ(b.other_ms, 7.0);   // forward's own 2 ms and aten::embedding's 5 ms
  EXPECT_DOUBLE_EQ(at(Category::kIdleOther), 22.0);
  EXPECT_DOUBLE_EQ(b.sum_ms(), 100.0);
  EXPECT_DOUBLE_EQ(b.span_ms, 100.0);
  EXPECT_EQ(b.events, 8);
  EXPECT_DOUBLE_EQ(b.other_by_name_ms.at("aten::embedding"), 5.0);
}

TEST(OpCategories, DeviceBreakdownIdleAndOverlap) {
  // A 50 ms step on two streams: a GEMM [0,20), an all-reduce [10,30) overlapping
  // it, an optimizer-phase elementwise kernel [35,40), a memcpy [40,42).
  std::vector<DeviceEvent> ev = {
      {"ampere_sgemm_128x64_tn", 0, 20 * kMs, DeviceEvent::Kind::kKernel, false},
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", 10 * kMs, 30 * kMs, DeviceEvent::Kind::kKernel, false},
      {"vectorized_elementwise_kernel", 35 * kMs, 40 * kMs, DeviceEvent::Kind::kKernel, true},
      {"Memcpy", 40 * kMs, 42 * kMs, DeviceEvent::Kind::kMemcpy, false},
      {"clipped_kernel_unknown", 45 * kMs, 60 * kMs, DeviceEvent::Kind::kKernel, false},
  };
  const Breakdown b = device_breakdown(ev, 0, 50 * kMs);
  auto at = [&](Category c) { return b.ms[size_t(c)]; };
  EXPECT_DOUBLE_EQ(at(Category::kGemm), 20.0);
  EXPECT_DOUBLE_EQ(at(Category::kCommunication), 20.0);
  EXPECT_DOUBLE_EQ(at(Category::kOptimizer), 5.0);
  EXPECT_DOUBLE_EQ(at(Category::kMemcpyMemset), 2.0);
  EXPECT_DOUBLE_EQ(b.other_ms, 5.0);    // the unknown kernel, clipped to the step
  EXPECT_DOUBLE_EQ(b.idle_ms, 8.0);     // [30,35), [42,45)
  EXPECT_DOUBLE_EQ(b.overlap_ms, 10.0); // [10,20) on two streams
  EXPECT_DOUBLE_EQ(b.sum_ms() - b.overlap_ms, 50.0);
  EXPECT_EQ(b.kernels, 4);
  EXPECT_EQ(b.memcpy_memset, 1);
}

// ---- CUPTI records -> per-step breakdown (synthetic record streams) ------------

// One 10 ms step: a GEMM [0,4), an elementwise kernel [4,7) and a memcpy [7,8),
// each record given in collector ticks at `ticks_per_ns`, from t0.
KernelActivityRecords one_step_records(double ticks_per_ns, int64_t t0 = 1'000'000) {
  auto t = [&](double ms) { return t0 + int64_t(std::llround(ms * 1e6 * ticks_per_ns)); };
  KernelActivityRecords r;
  r.records = {
      {DeviceEvent::Kind::kKernel, "sm90_xmma_gemm_bf16bf16_bf16f32", t(0), t(4), 7, 13, false},
      {DeviceEvent::Kind::kKernel, "vectorized_elementwise_kernel", t(4), t(7), 8, 13, false},
      {DeviceEvent::Kind::kMemcpy, "Memcpy", t(7), t(8), 9, 13, false},
  };
  // The clock samples bracket the step: 12 ms of steady time.
  r.clock_begin = {t(-1), 500'000'000};
  r.clock_end = {t(11), 500'000'000 + 12'000'000};
  return r;
}

std::vector<DeviceStepSpan> one_span(double ticks_per_ns, double dt_ms, int64_t t0 = 1'000'000) {
  return {{t0, t0 + int64_t(std::llround(10e6 * ticks_per_ns)), dt_ms}};
}

TEST(DeviceSteps, ExactCategoriesAndTheInvariantOnNanosecondRecords) {
  const DeviceSteps d = analyse_device_steps(one_step_records(1.0), one_span(1.0, 10.0));
  EXPECT_DOUBLE_EQ(d.ticks_per_ns, 1.0);
  EXPECT_EQ(d.duplicates_removed, 0);
  EXPECT_EQ(d.steps, 1);
  EXPECT_NEAR(d.total.ms[size_t(Category::kGemm)], 4.0, 1e-9);
  EXPECT_NEAR(d.total.ms[size_t(Category::kElementwiseNorm)], 3.0, 1e-9);
  EXPECT_NEAR(d.total.ms[size_t(Category::kMemcpyMemset)], 1.0, 1e-9);
  EXPECT_NEAR(d.total.busy_ms, 8.0, 1e-9);
  EXPECT_NEAR(d.total.idle_ms, 2.0, 1e-9);
  EXPECT_TRUE(check_busy_within_dt(d.total.busy_ms, d.dt_ms).holds);
}

TEST(DeviceSteps, DuplicateRecordsAreCountedOnce) {
  KernelActivityRecords r = one_step_records(1.0);
  const auto originals = r.records;
  // Every record delivered twice (as with KERNEL and CONCURRENT_KERNEL both on).
  r.records.insert(r.records.end(), originals.begin(), originals.end());
  // Two kernels of one graph replay share the launch's correlation id but
  // not their times: both are real.
  r.records.push_back({DeviceEvent::Kind::kKernel, "vectorized_elementwise_kernel", 1'000'000 + 8'000'000,
                       1'000'000 + 9'000'000, 8, 13, false});
  const DeviceSteps d = analyse_device_steps(r, one_span(1.0, 10.0));
  EXPECT_EQ(d.duplicates_removed, 3);
  EXPECT_EQ(d.total.kernels, 3);
  EXPECT_NEAR(d.total.ms[size_t(Category::kGemm)], 4.0, 1e-9);
  EXPECT_NEAR(d.total.ms[size_t(Category::kElementwiseNorm)], 4.0, 1e-9);
  EXPECT_NEAR(d.total.busy_ms, 9.0, 1e-9);
  EXPECT_TRUE(check_busy_within_dt(d.total.busy_ms, d.dt_ms).holds);
}

TEST(DeviceSteps, TscTicksAreConvertedToMilliseconds) {
  // Kineto registers TSC cycles as CUPTI's clock: 2.1 ticks per ns on the
  // first H100 host. Read as ns, every kernel looked 2.1x longer.
  const DeviceSteps d = analyse_device_steps(one_step_records(2.1), one_span(2.1, 10.0));
  EXPECT_NEAR(d.ticks_per_ns, 2.1, 1e-6);
  EXPECT_NEAR(d.total.ms[size_t(Category::kGemm)], 4.0, 1e-6);
  EXPECT_NEAR(d.total.busy_ms, 8.0, 1e-6);
  EXPECT_NEAR(d.total.span_ms, 10.0, 1e-6);
  EXPECT_TRUE(check_busy_within_dt(d.total.busy_ms, d.dt_ms).holds);

  // The same records with clock samples that claim nanoseconds: the defect.
  KernelActivityRecords wrong = one_step_records(2.1);
  wrong.clock_end.ticks = wrong.clock_begin.ticks + 12'000'000;
  const DeviceSteps bad = analyse_device_steps(wrong, one_span(2.1, 10.0));
  EXPECT_NEAR(bad.total.busy_ms, 16.8, 1e-6);
  const BusyInvariant inv = check_busy_within_dt(bad.total.busy_ms, bad.dt_ms);
  EXPECT_FALSE(inv.holds);
  EXPECT_NE(inv.reason.find("16.800 ms per step but the step took 10.000 ms"), std::string::npos) << inv.reason;
}

TEST(DeviceSteps, InvariantSlackAndReportFields) {
  EXPECT_TRUE(check_busy_within_dt(10.29, 10.0).holds);   // within 3 %
  EXPECT_FALSE(check_busy_within_dt(10.31, 10.0).holds);  // beyond it
  EXPECT_FALSE(check_busy_within_dt(1.0, 0.0).holds);     // nothing to check against
  nlohmann::json j = nlohmann::json::object();
  add_invariant(j, check_busy_within_dt(21.0, 10.0));
  EXPECT_EQ(j["valid"], false);
  EXPECT_EQ(j["invariant"]["holds"], false);
  EXPECT_DOUBLE_EQ(j["invariant"]["slack_pct"].get<double>(), kBusySlackPct);
  EXPECT_NE(j["invalid_reason"].get<std::string>().find("2.10x"), std::string::npos) << j.dump();
  add_invariant(j, check_busy_within_dt(9.0, 10.0));
  EXPECT_EQ(j["valid"], true);
  EXPECT_TRUE(j["invalid_reason"].is_null());
}

TEST(DeviceSteps, TwoStepsAreAveragedAndGraphLaunchesCounted) {
  KernelActivityRecords r = one_step_records(1.0);
  const auto first = r.records;
  for (auto rec : first) {  // the same kernels 10 ms later, in step 2
    rec.start += 10'000'000;
    rec.end += 10'000'000;
    rec.correlation_id += 100;
    r.records.push_back(rec);
  }
  r.graph_launch_ticks = {1'000'000 + 100, 1'000'000 + 10'000'100, 1'000'000 + 50'000'000};
  r.clock_end = {1'000'000 + 30'000'000, 500'000'000 + 30'000'000 - 0};
  r.clock_begin = {1'000'000, 500'000'000};
  std::vector<DeviceStepSpan> spans = {{1'000'000, 11'000'000, 10.0}, {11'000'000, 21'000'000, 10.0}};
  const DeviceSteps d = analyse_device_steps(r, spans);
  EXPECT_EQ(d.steps, 2);
  EXPECT_EQ(d.graph_launches, 2);  // the third is after the last step
  EXPECT_NEAR(d.total.busy_ms, 16.0, 1e-9);
  EXPECT_NEAR(d.dt_ms, 20.0, 1e-9);
  const nlohmann::json j = breakdown_json(d.total, d.steps, d.dt_ms / 2);
  EXPECT_NEAR(j["busy_ms"].get<double>(), 8.0, 1e-9);
  EXPECT_NEAR(j["categories_ms"]["gemm"].get<double>(), 4.0, 1e-9);
}

// ---- op breakdown of real steps ------------------------------------------------

nlohmann::json tiny_breakdown(const std::string& rung_name) {
  RunConfig cfg = config_for("tiny", Overrides{}, "cpu");
  const Rung rung = parse_rung(rung_name);
  cfg.rung = rung.name;
  cfg.sw = rung.sw;
  at::set_num_threads(1);
  SyntheticSpec spec{cfg.batch, cfg.seq, cfg.model.vocab_size, cfg.seed};
  spec.micro_steps = cfg.micro_steps();
  TrainStep step(cfg, torch::kCPU, make_synthetic_source(spec));
  PhaseObserver none;
  step.run(0, none);  // warm the allocator and oneDNN up
  return profile_ops(step, torch::kCPU, 1, /*breakdown_steps=*/3).op_breakdown;
}

TEST(OpBreakdown, CategoriesSumToTheMeasuredStepTimeOnCpu) {
  for (const char* rung : {"fp32", "flash", "fused-adamw"}) {
    const nlohmann::json b = tiny_breakdown(rung);
    ASSERT_TRUE(b["unavailable"].is_null()) << b.dump(2);
    EXPECT_EQ(b["steps_profiled"], 3);
    double sum = 0;
    for (const auto& [key, ms] : b["categories_ms"].items()) {
      EXPECT_GE(ms.get<double>(), 0.0) << rung << " " << key;
      sum += ms.get<double>();
    }
    // The categories are the trace's ProfilerStep span; the harness timed the
    // same steps around it.
    const double dt = b["step_dt_ms"].get<double>();
    EXPECT_NEAR(sum, dt, 0.05 * dt) << rung << ": " << b.dump(2);
    EXPECT_NEAR(b["sum_pct_of_dt"].get<double>(), 100.0, 5.0) << rung;
    const auto& c = b["categories_ms"];
    EXPECT_GT(c["gemm"].get<double>(), 0.0) << rung;
    EXPECT_GT(c["elementwise_norm"].get<double>(), 0.0) << rung;
    EXPECT_GT(c["softmax_loss"].get<double>(), 0.0) << rung;
    EXPECT_GT(c["optimizer"].get<double>(), 0.0) << rung;
    EXPECT_EQ(c["communication"].get<double>(), 0.0) << rung;
    // Explicit attention is GEMMs and a softmax; SDPA is an attention operator.
    if (std::string(rung) == "fp32")
      EXPECT_EQ(c["attention"].get<double>(), 0.0);
    else
      EXPECT_GT(c["attention"].get<double>(), 0.0) << rung;
    EXPECT_GT(b["ops_per_step"].get<double>(), 50.0) << rung;
    // Host operators cannot be busy longer than the harness's step.
    EXPECT_EQ(b["valid"], true) << rung << ": " << b.dump(2);
    EXPECT_LE(b["invariant"]["busy_ms"].get<double>(), dt * 1.03) << rung;
  }
}

// ---- CUPTI without a GPU -------------------------------------------------------

TEST(KernelActivity, FailsGracefullyWithoutACudaDevice) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present";
  try {
    start_kernel_activity();
    FAIL() << "kernel activity started without a CUDA device";
  } catch (const KernelActivityUnavailable& e) {
#ifdef LADDER_WITH_CUPTI
    EXPECT_STREQ(e.what(), "no CUDA device: kernel activity unavailable");
#else
    EXPECT_NE(std::string(e.what()).find("kernel activity unavailable"), std::string::npos);
#endif
  }
  // The process is intact: a second attempt fails the same way.
  EXPECT_THROW(start_kernel_activity(), KernelActivityUnavailable);
}

// ---- memory monitor ------------------------------------------------------------

TEST(MemoryMonitor, PerStepPeaksSeeEachStepsOwnAllocation) {
  MemoryMonitor monitor(torch::kCPU);
  monitor.before_step();
  auto big = torch::ones({64, 1024, 1024}, torch::kFloat32);  // 256 MiB, touched
  big.reset();
  const StepMemory first = monitor.after_step();
  monitor.before_step();
  const StepMemory second = monitor.after_step();
  EXPECT_FALSE(first.cuda);
  // VmHWM during the first step includes the 256 MiB; the second step, after
  // the reset, does not (the memory was returned to the OS).
  if (monitor.totals().peak_rss_reset) {
    EXPECT_GT(first.peak_rss_bytes - second.peak_rss_bytes, 200ll << 20)
        << first.peak_rss_bytes << " vs " << second.peak_rss_bytes;
  }
  EXPECT_GE(monitor.totals().peak_rss_bytes, first.peak_rss_bytes);
  EXPECT_EQ(monitor.totals().alloc_retries, 0);
}

}  // namespace
