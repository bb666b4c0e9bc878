// tests/profiler/test_profiler.cpp: the profiler's pieces on CPU. The --profile
// schedule (torch.profiler's semantics, and bad input: exit 2), the category
// table and both breakdowns on hand-made events with exact results, the op
// breakdown of real tiny steps against the harness's own step time, the
// CUPTI record aggregation on synthetic record streams (clock conversion,
// duplicates, the busy <= dt invariant), the CUPTI collector failing
// gracefully without a GPU, and the memory monitor.
#include <algorithm>
#include <atomic>
#include <thread>
#include <map>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "bench/measure/device/device.h"
#include "bench/run/matrix.h"
#include "bench/measure/observers/memory_monitor.h"
#include "bench/measure/harness/op_breakdown.h"
#include "bench/run/peers.h"
#include "profiler/trace/device_steps.h"
#include "profiler/trace/kernel_activity.h"
#include "profiler/trace/op_categories.h"
#include "profiler/ranges/range.h"
#include "profiler/trace/range_spans.h"
#include "profiler/trace/schedule.h"
#include "profiler/trace/trace_breakdown.h"
#include "tests/support/run_ladder.h"
#include "variants/config/config.h"
#include "variants/config/rungs.h"
#include "variants/step/step.h"

namespace {

namespace fs = std::filesystem;
using namespace ladder;
using namespace ladder::profiler;

// The report's op_breakdown of `total`, as the report holds it.
nlohmann::json section_json(const Breakdown& total, int64_t steps, double dt_ms, size_t top = 8) {
  return fields::to_json(breakdown_section("test", total, steps, dt_ms, top));
}

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
  is("ladder::classifier_cross_entropy", Category::kSoftmaxLoss);
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
  // torch.compile's kernels, named after what they fuse.
  is("triton_red_fused__to_copy_native_layer_norm_backward_3", Category::kElementwiseNorm);
  is("triton_poi_fused__to_copy_add_gelu_5", Category::kElementwiseNorm);
  is("triton_per_fused__log_softmax__to_copy_nll_loss_forward_7", Category::kSoftmaxLoss);
  is("triton_tem_fused_addmm_12", Category::kGemm);
  is("triton_poi_fused__to_copy_0", Category::kMemcpyMemset);
  // Its C++ kernels on a CPU, as the compile peer's profiler ranges name them.
  is("graph_0_cpp_fused_add_native_layer_norm_2", Category::kElementwiseNorm);
  is("graph_1_cpp_fused_gelu_gelu_backward_view_5", Category::kElementwiseNorm);
  is("graph_0_cpp_fused__log_softmax__to_copy_nll_loss_forward_7", Category::kSoftmaxLoss);
  is("graph_1_cpp_fused_embedding_dense_backward_9", Category::kElementwiseNorm);
  is("graph_0_cpp_fused_clone_3", Category::kMemcpyMemset);
  is("cpp_fused_sum_1", Category::kElementwiseNorm);
  // cuDNN SDPA backward's helpers, as CUPTI names them (mangled).
  is("_ZN5cudnn6fusion28compute_dot_do_o_specializedILb1ELi64EEEvPKvS3_PvS4_jjj", Category::kAttention);
  is("_ZN5cudnn6fusion20convert_dq_to_16bitsILb1EEEvPKvPvjjjjjjjjjjPKfS6_S6_PfS3_S4_S4_bb", Category::kAttention);
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
  // Each category's names, by their own (self) time: the t inside linear is
  // GEMM under its own name, the add_ optimizer by its context.
  const auto& gemm = b.by_name[size_t(Category::kGemm)];
  ASSERT_EQ(gemm.size(), 3u);
  EXPECT_DOUBLE_EQ(gemm.at("aten::linear").ms, 2.0);
  EXPECT_DOUBLE_EQ(gemm.at("aten::t").ms, 5.0);
  EXPECT_DOUBLE_EQ(gemm.at("aten::addmm").ms, 23.0);
  EXPECT_EQ(gemm.at("aten::addmm").calls, 1);
  EXPECT_DOUBLE_EQ(b.by_name[size_t(Category::kOptimizer)].at("aten::add_").ms, 20.0);
  EXPECT_DOUBLE_EQ(b.by_name[size_t(Category::kOptimizer)].at("optimizer").ms, 20.0);
  EXPECT_DOUBLE_EQ(b.by_name[size_t(Category::kIdleOther)].at("aten::embedding").ms, 5.0);
  EXPECT_TRUE(b.by_name[size_t(Category::kElementwiseNorm)].empty());
  for (size_t i = 0; i < kCategoryCount; ++i) {  // the names make up each category, idle aside
    double sum = 0;
    for (const auto& [name, t] : b.by_name[i]) sum += t.ms;
    EXPECT_DOUBLE_EQ(sum, b.ms[i] - (Category(i) == Category::kIdleOther ? b.idle_ms : 0.0)) << category_key(Category(i));
  }
}

// ZeRO-1's parameter gather sits inside the optimizer range but is
// communication: its own wait, and the copies under it, count as such; the
// AdamW before it stays optimizer.
TEST(OpCategories, TheZero1GatherInsideTheOptimizerIsCommunication) {
  std::vector<HostEvent> ev = {
      {"optimizer", 0, 50 * kMs, true},
      {"aten::add_", 0, 20 * kMs, false},
      {names::kZero1Gather, 20 * kMs, 50 * kMs, true},
      {"aten::copy_", 22 * kMs, 25 * kMs, false},
  };
  const Breakdown b = host_breakdown(ev, 0, 50 * kMs);
  EXPECT_DOUBLE_EQ(b.ms[size_t(Category::kOptimizer)], 20.0);
  EXPECT_DOUBLE_EQ(b.ms[size_t(Category::kCommunication)], 30.0);
  EXPECT_DOUBLE_EQ(b.by_name[size_t(Category::kCommunication)].at(names::kZero1Gather).ms, 27.0);
}

// Attention that runs as batched matmuls and a softmax (the explicit or math
// attention) counts in the attention band: the operators inside its range,
// and in backward the nodes made for them, found by their sequence numbers,
// and whatever runs under an operator or node named as attention (ladder's
// explicit attention node, SDPA's math backend). A backward node of an
// operator outside (the projection's MmBackward0), and an operator after the
// range that shares a sequence number, stay GEMM.
TEST(OpCategories, AttentionsMatmulsAndSoftmaxCountAsAttentionInForwardAndBackward) {
  //  forward [0,40):  aten::mm [0,10) seq 7;  attention [10,30) > aten::bmm [11,15) seq 8,
  //                   aten::_softmax [15,20) seq 9, aten::bmm [20,28) seq 10;  aten::mm [30,38) seq 10
  //  backward [40,100): evaluate_function: BmmBackward0 [40,60) seq 10 > aten::bmm [41,59)
  //                     evaluate_function: SoftmaxBackward0 [60,65) seq 9 > aten::_softmax_backward_data [61,64)
  //                     evaluate_function: MmBackward0 [65,90) seq 7 > aten::mm [66,89)
  //                     an attention node by its name [90,100) > aten::bmm [91,99)
  const std::string node = "autograd::engine::evaluate_function: ";
  std::vector<HostEvent> ev = {
      {names::kForward, 0, 40 * kMs, true},
      {"aten::mm", 0, 10 * kMs, false, 7},
      {names::kAttention, 10 * kMs, 30 * kMs, true},
      {"aten::bmm", 11 * kMs, 15 * kMs, false, 8},
      {"aten::_softmax", 15 * kMs, 20 * kMs, false, 9},
      {"aten::bmm", 20 * kMs, 28 * kMs, false, 10},
      {"aten::mm", 30 * kMs, 38 * kMs, false, 10},
      {names::kBackward, 40 * kMs, 100 * kMs, true},
      {node + "BmmBackward0", 40 * kMs, 60 * kMs, false, 10},
      {"aten::bmm", 41 * kMs, 59 * kMs, false},
      {node + "SoftmaxBackward0", 60 * kMs, 65 * kMs, false, 9},
      {"aten::_softmax_backward_data", 61 * kMs, 64 * kMs, false},
      {node + "MmBackward0", 65 * kMs, 90 * kMs, false, 7},
      {"aten::mm", 66 * kMs, 89 * kMs, false},
      {"torch::autograd::CppNode<ExplicitAttentionFunction>", 90 * kMs, 100 * kMs, false, 3},
      {"aten::bmm", 91 * kMs, 99 * kMs, false},
  };
  const Breakdown b = host_breakdown(ev, 0, 100 * kMs);
  auto at = [&](Category c) { return b.ms[size_t(c)]; };
  // forward: the range's own 3 ms, 4 + 5 + 8 inside; backward: 20 + 5, and the node named attention 10.
  EXPECT_DOUBLE_EQ(at(Category::kAttention), 55.0);
  EXPECT_DOUBLE_EQ(at(Category::kGemm), 10.0 + 8.0 + 25.0);
  EXPECT_DOUBLE_EQ(at(Category::kSoftmaxLoss), 0.0);
  EXPECT_DOUBLE_EQ(b.by_name[size_t(Category::kAttention)].at("aten::bmm").ms, 4.0 + 8.0 + 18.0 + 8.0);
  EXPECT_DOUBLE_EQ(b.by_name[size_t(Category::kAttention)].at("aten::_softmax_backward_data").ms, 3.0);
  // Without the range, the same operators are GEMM and loss, as before; the node named attention stays.
  ev.erase(ev.begin() + 2);
  const Breakdown plain = host_breakdown(ev, 0, 100 * kMs);
  EXPECT_DOUBLE_EQ(plain.ms[size_t(Category::kAttention)], 10.0);
  EXPECT_DOUBLE_EQ(plain.ms[size_t(Category::kSoftmaxLoss)], 10.0);  // _softmax 5, SoftmaxBackward0's node 2 + 3
  EXPECT_DOUBLE_EQ(plain.ms[size_t(Category::kGemm)], 43.0 + 4.0 + 8.0 + 20.0);
}

// Each operator's own time by the phase whose range it ran in: the phases
// add up to the busy time, communication comes out of the phase it ran in,
// the step's own code is outside, and the layer ranges split forward and
// backward.
TEST(OpCategories, PhasesAndLayersFromTheRangesTheOperatorsRanIn) {
  //  [0,100) step fp32:  [0,5) data > aten::copy_ [1,3)
  //                      [5,35) forward > layer 0 [5,20) > aten::mm [6,18); layer 1 [20,34)
  //                      [35,80) backward > layer 1 [35,50); all-reduce bucket 0 [50,60) > aten::add_ [51,52)
  //                      [80,95) optimizer > aten::_fused_adamw_ [80,94)
  //                      [95,100) the step's own code
  std::vector<HostEvent> ev = {
      {names::step("fp32"), 0, 100 * kMs, true},   {names::kData, 0, 5 * kMs, true},
      {"aten::copy_", 1 * kMs, 3 * kMs, false},     {names::kForward, 5 * kMs, 35 * kMs, true},
      {names::layer(0), 5 * kMs, 20 * kMs, true},   {"aten::mm", 6 * kMs, 18 * kMs, false},
      {names::layer(1), 20 * kMs, 34 * kMs, true},  {names::kBackward, 35 * kMs, 80 * kMs, true},
      {names::layer(1), 35 * kMs, 50 * kMs, true},  {names::allreduce_bucket(0), 50 * kMs, 60 * kMs, true},
      {"aten::add_", 51 * kMs, 52 * kMs, false},    {names::kOptimizer, 80 * kMs, 95 * kMs, true},
      {"aten::_fused_adamw_", 80 * kMs, 94 * kMs, false},
  };
  const Breakdown b = host_breakdown(ev, 0, 100 * kMs);
  ASSERT_TRUE(b.has_phases);
  EXPECT_DOUBLE_EQ(b.phases.data, 5.0);
  EXPECT_DOUBLE_EQ(b.phases.forward, 30.0);
  EXPECT_DOUBLE_EQ(b.phases.backward, 35.0);  // 45 less the bucket's 10
  EXPECT_DOUBLE_EQ(b.phases.communication, 10.0);
  EXPECT_DOUBLE_EQ(b.phases.optimizer, 15.0);
  EXPECT_DOUBLE_EQ(b.phases.outside, 5.0);
  EXPECT_DOUBLE_EQ(b.phases.in_phases() + b.phases.outside, b.busy_ms);
  EXPECT_DOUBLE_EQ(b.layer_ms.at("forward/layer 0"), 15.0);
  EXPECT_DOUBLE_EQ(b.layer_ms.at("forward/layer 1"), 14.0);
  EXPECT_DOUBLE_EQ(b.layer_ms.at("backward/layer 1"), 15.0);
  EXPECT_EQ(b.layer_ms.size(), 3u);
  // Per step in the section, and the share of the busy time the phases hold.
  Breakdown two = b;
  two += b;
  const OpBreakdownSection s = breakdown_section("test", two, 2, 100.0);
  ASSERT_TRUE(s.phases_ms && s.phases_pct_of_busy && s.layers_ms);
  EXPECT_DOUBLE_EQ(s.phases_ms->backward, 35.0);
  EXPECT_DOUBLE_EQ(*s.phases_pct_of_busy, 95.0);
  EXPECT_DOUBLE_EQ(s.layers_ms->at("forward/layer 1"), 14.0);
  // The device's breakdown has none.
  EXPECT_FALSE(breakdown_section("test", device_breakdown({}, 0, kMs), 1, 1.0).phases_ms);
}

TEST(OpCategories, DisplayNamesDemangleAndDropParameters) {
  // CUPTI gives mangled names; Kineto's traces already demangled ones.
  EXPECT_EQ(display_name("_ZN5cudnn6fusion28compute_dot_do_o_specializedILb1ELi64EEEvPKvS3_PvS4_jjjjfS3_bS3_S4_S3_iii"),
            "void cudnn::fusion::compute_dot_do_o_specialized<true, 64>");
  EXPECT_EQ(display_name("_ZN6ladder12_GLOBAL__N_113add_ln_kernelINS0_2BfIfEEEEvPKfPT_l"),
            "void ladder::(anonymous namespace)::add_ln_kernel<ladder::(anonymous namespace)::Bf<float> >");
  // A lambda's parameter list inside the template arguments stays.
  EXPECT_EQ(display_name("_ZN6ladder18elementwise_kernelIZNS_4use2EvEUliE_EEviT_"),
            "void ladder::elementwise_kernel<ladder::use2()::{lambda(int)#1}>");
  EXPECT_EQ(display_name("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"), "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
  EXPECT_EQ(display_name("aten::add_"), "aten::add_");
  EXPECT_EQ(display_name("_Znot a symbol"), "_Znot a symbol");  // not demangled: as it is
  const std::string clipped = display_name(std::string(300, 'k'), 20);
  EXPECT_EQ(clipped, std::string(17, 'k') + "...");
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
  EXPECT_DOUBLE_EQ(b.by_name[size_t(Category::kOptimizer)].at("vectorized_elementwise_kernel").ms, 5.0);
  EXPECT_DOUBLE_EQ(b.by_name[size_t(Category::kMemcpyMemset)].at("Memcpy").ms, 2.0);
  EXPECT_DOUBLE_EQ(b.by_name[size_t(Category::kIdleOther)].at("clipped_kernel_unknown").ms, 5.0);
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
  OpBreakdownSection b;
  add_invariant(b, check_busy_within_dt(21.0, 10.0));
  nlohmann::json j = fields::to_json(b);
  EXPECT_EQ(j["valid"], false);
  EXPECT_EQ(j["invariant"]["holds"], false);
  EXPECT_DOUBLE_EQ(j["invariant"]["slack_pct"].get<double>(), kBusySlackPct);
  EXPECT_NE(j["invalid_reason"].get<std::string>().find("2.10x"), std::string::npos) << j.dump();
  add_invariant(b, check_busy_within_dt(9.0, 10.0));
  j = fields::to_json(b);
  EXPECT_EQ(j["valid"], true);
  EXPECT_TRUE(j["invalid_reason"].is_null());
}

TEST(DeviceSteps, EachActivityCountsInThePhaseOpenAtItsLaunch) {
  // One step on TSC-like ticks (2.1 per ns): the GEMM launched in forward,
  // the elementwise kernel while the main thread's backward is open (by the
  // autograd thread, on a GPU: which thread does not matter), the memcpy's
  // launch record missing. Launches are before their kernels, as on a GPU.
  const double k = 2.1;
  const int64_t t0 = 1'000'000;
  auto t = [&](double ms) { return t0 + int64_t(std::llround(ms * 1e6 * k)); };
  KernelActivityRecords r = one_step_records(k, t0);
  r.launches = {{7, t(-0.5)}, {8, t(3.5)}, {8, t(3.6)}};  // a runtime and a driver call share 8
  const std::vector<DevicePhaseSpan> phases = {{DeviceEvent::Phase::kForward, t(-1), t(2)},
                                               {DeviceEvent::Phase::kBackward, t(2), t(6)}};
  const DeviceSteps d = analyse_device_steps(r, one_span(k, 10.0, t0), phases);
  EXPECT_NEAR(d.total.phases.forward, 4.0, 1e-6);   // the GEMM
  EXPECT_NEAR(d.total.phases.backward, 3.0, 1e-6);  // the other thread's kernel
  EXPECT_NEAR(d.total.phases.outside, 1.0, 1e-6);   // the memcpy, with no launch record
  EXPECT_EQ(d.unlaunched, 1);
  EXPECT_TRUE(d.total.has_phases);
  const nlohmann::json j = section_json(d.total, d.steps, 10.0);
  EXPECT_NEAR(j["phases_ms"]["backward"].get<double>(), 3.0, 1e-6);
  EXPECT_NEAR(j["phases_pct_of_busy"].get<double>(), 100.0 * 7.0 / 8.0, 1e-6);  // of the 8 ms of activity
  // A launch in the optimizer's span makes its kernel the optimizer's.
  r.launches = {{7, t(-0.5)}, {8, t(3.5)}, {9, t(6.5)}};
  const std::vector<DevicePhaseSpan> with_optimizer = {{DeviceEvent::Phase::kOptimizer, t(3), t(4)}};
  const DeviceSteps o = analyse_device_steps(r, one_span(k, 10.0, t0), with_optimizer);
  EXPECT_NEAR(o.total.ms[size_t(Category::kOptimizer)], 3.0, 1e-6);
  EXPECT_NEAR(o.total.phases.optimizer, 3.0, 1e-6);
  EXPECT_NEAR(o.total.phases.outside, 5.0, 1e-6);
  // Without phase spans there are no phases (as before).
  EXPECT_FALSE(analyse_device_steps(r, one_span(k, 10.0, t0)).total.has_phases);
  // With layer spans (any thread's), each kernel in the innermost layer open at its launch.
  r.launches = {{7, t(-0.5)}, {8, t(3.5)}};
  const std::vector<RangeSpan> layers = {{"layer 0", t(-1), t(1)}, {"layer 1", t(3), t(5)}};
  const DeviceSteps l = analyse_device_steps(r, one_span(k, 10.0, t0), phases, layers);
  EXPECT_NEAR(l.total.layer_ms.at("forward/layer 0"), 4.0, 1e-6);
  EXPECT_NEAR(l.total.layer_ms.at("backward/layer 1"), 3.0, 1e-6);
  EXPECT_EQ(l.total.layer_ms.size(), 2u);
}

TEST(LayerSpans, HearsTheLayerRangesOfEveryThreadOnTheGivenClock) {
  if (!compiled_in()) GTEST_SKIP() << "built without ranges (LADDER_WITH_PROFILER=OFF)";
  std::atomic<int64_t> clock{0};
  std::vector<RangeSpan> spans;
  {
    LayerSpans layers([&] { return ++clock; });
    {
      ScopedRange forward(names::kForward);  // not a layer: not recorded
      ScopedRange layer(names::layer(0));
    }
    std::thread autograd([] {  // backward's layer ranges open and close on the autograd thread
      begin_range(names::layer(1));
      end_range();
    });
    autograd.join();
    spans = layers.spans();
  }
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].name, "layer 0");
  EXPECT_EQ(spans[1].name, "layer 1");
  for (const RangeSpan& s : spans) EXPECT_LT(s.begin_ticks, s.end_ticks);
  EXPECT_LT(spans[0].end_ticks, spans[1].begin_ticks);
  // Gone with it: a later range is heard by nobody, and another may listen.
  { ScopedRange layer(names::layer(2)); }
  LayerSpans again([&] { return ++clock; });
  EXPECT_TRUE(again.spans().empty());
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
  const nlohmann::json j = section_json(d.total, d.steps, d.dt_ms / 2);
  EXPECT_NEAR(j["busy_ms"].get<double>(), 8.0, 1e-9);
  EXPECT_NEAR(j["categories_ms"]["gemm"].get<double>(), 4.0, 1e-9);
  // The largest names per category, per step: one GEMM and one elementwise
  // kernel each step.
  const auto& gemm = j["top_by_category"]["gemm"];
  ASSERT_EQ(gemm.size(), 1u) << j.dump(2);
  EXPECT_EQ(gemm[0]["name"], "sm90_xmma_gemm_bf16bf16_bf16f32");
  EXPECT_NEAR(gemm[0]["ms"].get<double>(), 4.0, 1e-9);
  EXPECT_NEAR(gemm[0]["calls"].get<double>(), 1.0, 1e-9);
  EXPECT_EQ(j["top_by_category"]["elementwise_norm"][0]["name"], "vectorized_elementwise_kernel");
  EXPECT_TRUE(j["top_by_category"]["communication"].empty());
}

TEST(OpCategories, TopByCategoryIsLargestFirstAndCapped) {
  Breakdown b;
  for (int i = 1; i <= 12; ++i) {
    b.by_name[size_t(Category::kElementwiseNorm)][fmt::format("kernel{:02d}", i)] = {double(i), 2 * int64_t(i)};
    b.ms[size_t(Category::kElementwiseNorm)] += i;
  }
  const nlohmann::json j = section_json(b, /*steps=*/2, /*dt_ms=*/100.0, /*top=*/3);
  const auto& rows = j["top_by_category"]["elementwise_norm"];
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["name"], "kernel12");
  EXPECT_EQ(rows[2]["name"], "kernel10");
  EXPECT_DOUBLE_EQ(rows[0]["ms"].get<double>(), 6.0);      // 12 ms over 2 steps
  EXPECT_DOUBLE_EQ(rows[0]["calls"].get<double>(), 12.0);  // 24 calls over 2 steps
  Breakdown twice = b;
  twice += b;
  EXPECT_DOUBLE_EQ(twice.by_name[size_t(Category::kElementwiseNorm)].at("kernel07").ms, 14.0);
  EXPECT_EQ(twice.by_name[size_t(Category::kElementwiseNorm)].at("kernel07").calls, 28);
}

// "other" names its kernels as the categories do: demangled, without parameters.
TEST(OpCategories, OtherTopIsDemangled) {
  Breakdown b;
  b.other_by_name_ms["_ZN2at6native25embedding_backward_kernelIfEEvPKT_i"] = 4.0;
  b.other_ms = 4.0;
  const nlohmann::json j = section_json(b, /*steps=*/2, /*dt_ms=*/100.0);
  ASSERT_EQ(j["other_top"].size(), 1u);
  EXPECT_EQ(j["other_top"][0]["name"], "void at::native::embedding_backward_kernel<float>");
  EXPECT_DOUBLE_EQ(j["other_top"][0]["ms"].get<double>(), 2.0);
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
  return fields::to_json(profile_ops(step, torch::kCPU, 1, /*breakdown_steps=*/3).op_breakdown);
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
    // Every rung has attention: SDPA's operator, or the explicit attention's
    // batched matmuls and softmax, counted by the range around them.
    EXPECT_GT(c["attention"].get<double>(), 0.0) << rung;
    if (std::string(rung) == "fp32") {
      bool bmm = false;
      for (const auto& row : b["top_by_category"]["attention"]) bmm = bmm || row["name"] == "aten::bmm";
      EXPECT_TRUE(bmm) << b["top_by_category"]["attention"].dump(2);
    }
    EXPECT_GT(b["ops_per_step"].get<double>(), 50.0) << rung;
    // Host operators cannot be busy longer than the harness's step.
    EXPECT_EQ(b["valid"], true) << rung << ": " << b.dump(2);
    EXPECT_LE(b["invariant"]["busy_ms"].get<double>(), dt * 1.03) << rung;
    // Each band names what makes it up, largest first, and no more time than
    // the band holds.
    auto names = [&](const char* category) {
      std::vector<std::string> out;
      double ms = 0, last = 1e300;
      for (const auto& row : b["top_by_category"][category]) {
        out.push_back(row["name"].get<std::string>());
        EXPECT_LE(row["ms"].get<double>(), last) << rung << " " << category;
        EXPECT_GT(row["calls"].get<double>(), 0.0) << rung << " " << category;
        last = row["ms"].get<double>();
        ms += last;
      }
      EXPECT_LE(ms, c[category].get<double>() * (1 + 1e-9)) << rung << " " << category;
      return out;
    };
    auto has = [](const std::vector<std::string>& v, const std::string& name) {
      return std::find(v.begin(), v.end(), name) != v.end();
    };
    const auto optimizer = names("optimizer");
    EXPECT_EQ(has(optimizer, "aten::_fused_adamw_"), std::string(rung) == "fused-adamw") << rung;
    const auto gemm = names("gemm");
    EXPECT_TRUE(has(gemm, "aten::mm") || has(gemm, "aten::addmm")) << rung;
    EXPECT_TRUE(names("communication").empty()) << rung;
    // The whole table: every operator's own time, so each band but
    // idle/other (which also holds the time in no operator) is its sum.
    std::map<std::string, double> band_sum;
    for (const auto& k : b["kernels"]) band_sum[k["band"].get<std::string>()] += k["ms"].get<double>();
    for (const auto& [key, ms] : c.items()) {
      if (key == "idle_other") continue;
      EXPECT_NEAR(band_sum[key], ms.get<double>(), 1e-9) << rung << " " << key;
    }
    EXPECT_NEAR(band_sum["idle_other"] + b["idle_ms"].get<double>(), c["idle_other"].get<double>(), 1e-9) << rung;
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
  StepRecord warm, rec1, rec2;
  monitor.before_step(0, /*measured=*/false);  // warm-up: not read
  monitor.after_step(warm, false);
  EXPECT_FALSE(warm.has_memory);
  monitor.measurement_begins();
  monitor.before_step(1, true);
  auto big = torch::ones({64, 1024, 1024}, torch::kFloat32);  // 256 MiB, touched
  big.reset();
  monitor.after_step(rec1, true);
  monitor.before_step(2, true);
  monitor.after_step(rec2, true);
  ASSERT_TRUE(rec1.has_memory && rec2.has_memory);
  const StepMemory first = rec1.memory, second = rec2.memory;
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

// ---- a Kineto Chrome trace -> the op breakdown (scripts/peer.py's steps) -------

// One 10 ms step (ProfilerStep#1, [1, 11) ms) as torch.profiler writes it, in
// microseconds: on the stepping thread a GEMM [1.1, 4.1), an add_ [4.2, 5.2)
// and the optimizer range [6, 9) holding _fused_adamw_ [6.1, 8.1); an
// operator of another thread; on the device a GEMM kernel [1.3, 3.3), a
// kernel launched inside the optimizer range [6.3, 6.8), a memset
// [9, 9.1); a graph launch; and events after the step.
nlohmann::json synthetic_trace() {
  using nlohmann::json;
  auto x = [](const char* cat, const char* name, double ts, double dur, int tid, json args = json::object()) {
    return json{{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 100}, {"tid", tid}, {"ts", ts}, {"dur", dur},
                {"args", args}};
  };
  return {{"traceEvents",
           {x("user_annotation", "ProfilerStep#1", 1000, 10000, 1),
            x("cpu_op", "aten::mm", 1100, 3000, 1),
            x("cuda_runtime", "cudaLaunchKernel", 1200, 10, 1, {{"correlation", 7}}),
            x("kernel", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", 1300, 2000, 7, {{"correlation", 7}}),
            x("cpu_op", "aten::add_", 4200, 1000, 1),
            x("cuda_runtime", "cudaGraphLaunch", 5000, 10, 1, {{"correlation", 9}}),
            x("user_annotation", "optimizer", 6000, 3000, 1),
            x("cpu_op", "aten::_fused_adamw_", 6100, 2000, 1),
            x("cuda_runtime", "cudaLaunchKernel", 6200, 10, 1, {{"correlation", 8}}),
            x("kernel", "vectorized_elementwise_kernel", 6300, 500, 7, {{"correlation", 8}}),
            x("gpu_memset", "Memset (Device)", 9000, 100, 7),
            x("cpu_op", "aten::mm", 2000, 500, 2),
            x("cpu_op", "aten::mm", 20000, 500, 1),
            x("kernel", "nvjet_after_the_step", 20000, 500, 7),
            json{{"ph", "i"}, {"name", "an instant"}, {"ts", 1500}}}}};
}

TEST(TraceBreakdown, HostOperatorsOfTheSteppingThread) {
  const TraceBreakdown t = trace_breakdown(synthetic_trace(), /*device=*/false);
  EXPECT_EQ(t.steps, 1);
  EXPECT_EQ(t.cpu_ops, 4);  // mm, add_, _fused_adamw_ and the other thread's mm
  EXPECT_EQ(t.graph_launches, 1);
  auto at = [&](Category c) { return t.total.ms[size_t(c)]; };
  EXPECT_NEAR(at(Category::kGemm), 3.0, 1e-9);
  EXPECT_NEAR(at(Category::kElementwiseNorm), 1.0, 1e-9);
  EXPECT_NEAR(at(Category::kOptimizer), 3.0, 1e-9);  // the range's own 1 ms and the AdamW inside it
  EXPECT_NEAR(t.total.idle_ms, 3.0, 1e-9);
  EXPECT_NEAR(t.total.sum_ms(), 10.0, 1e-9);
  EXPECT_EQ(t.total.kernels, 0);
}

TEST(TraceBreakdown, DeviceKernelsWithTheOptimizerByLaunch) {
  const TraceBreakdown t = trace_breakdown(synthetic_trace(), /*device=*/true);
  auto at = [&](Category c) { return t.total.ms[size_t(c)]; };
  EXPECT_NEAR(at(Category::kGemm), 2.0, 1e-9);
  EXPECT_NEAR(at(Category::kOptimizer), 0.5, 1e-9);  // an elementwise kernel, launched in the optimizer range
  EXPECT_NEAR(at(Category::kElementwiseNorm), 0.0, 1e-9);
  EXPECT_NEAR(at(Category::kMemcpyMemset), 0.1, 1e-9);
  EXPECT_NEAR(t.total.busy_ms, 2.6, 1e-9);
  EXPECT_NEAR(t.total.idle_ms, 7.4, 1e-9);
  EXPECT_EQ(t.total.kernels, 2);
  EXPECT_EQ(t.total.memcpy_memset, 1);
  EXPECT_NEAR(t.total.by_name[size_t(Category::kGemm)].at("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT").ms, 2.0,
              1e-9);
}

TEST(TraceBreakdown, SaysWhatIsMissing) {
  auto message = [](const nlohmann::json& j) {
    try {
      trace_breakdown(j, false);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(nlohmann::json::array()).find("no traceEvents"), std::string::npos);
  nlohmann::json no_steps = synthetic_trace();
  no_steps["traceEvents"].erase(no_steps["traceEvents"].begin());
  EXPECT_NE(message(no_steps).find("no ProfilerStep#N range"), std::string::npos) << message(no_steps);
}

TEST(PeerBreakdown, FromTheTraceItWroteOrWhyNot) {
  const std::string path = ::testing::TempDir() + "peer_breakdown.trace.json";
  std::ofstream(path) << synthetic_trace().dump();
  std::optional<OpCounts> op_counts;
  const nlohmann::json b =
      fields::to_json(peer_op_breakdown({{"trace", path}, {"step_dt_ms", {10.0}}}, /*cuda=*/false, &op_counts));
  const nlohmann::json counts = fields::to_json(op_counts);
  EXPECT_TRUE(b["unavailable"].is_null()) << b.dump(2);
  EXPECT_EQ(b["source"], "kineto trace of scripts/peer.py: CPU operators");
  EXPECT_EQ(b["steps_profiled"], 1);
  EXPECT_EQ(b["trace"], path);
  EXPECT_NEAR(b["categories_ms"]["gemm"].get<double>(), 3.0, 1e-9);
  EXPECT_NEAR(b["categories_pct_of_dt"]["gemm"].get<double>(), 30.0, 1e-9);
  EXPECT_EQ(b["valid"], true);
  EXPECT_EQ(b["ops_per_step"].get<double>(), 4.0);
  EXPECT_EQ(counts["cpu_ops_per_step"], 4);
  const nlohmann::json d =
      fields::to_json(peer_op_breakdown({{"trace", path}, {"step_dt_ms", {10.0}}}, /*cuda=*/true));
  EXPECT_EQ(d["kernel_launches_per_step"].get<double>(), 2.0);
  EXPECT_EQ(d["graph_launches_per_step"].get<double>(), 1.0);
  // Busier than the step took: the invariant says so.
  EXPECT_EQ(peer_op_breakdown({{"trace", path}, {"step_dt_ms", {5.0}}}, false)->valid, false);
  // No trace, a step count that does not match, the peer's own reason: unavailable, and why.
  auto why = [](const nlohmann::json& partial) {
    const nlohmann::json j = fields::to_json(peer_op_breakdown(partial, false));
    EXPECT_EQ(j["valid"], false) << j.dump();
    return j["unavailable"].get<std::string>();
  };
  EXPECT_NE(why({{"trace", path + ".missing"}, {"step_dt_ms", {10.0}}}).find(".missing"), std::string::npos);
  EXPECT_NE(why({{"trace", path}, {"step_dt_ms", {10.0, 10.0}}}).find("1 ProfilerStep ranges but the peer timed 2"),
            std::string::npos);
  EXPECT_NE(why({{"trace", path}}).find("step_dt_ms"), std::string::npos);
  EXPECT_EQ(why({{"unavailable", "the profiled steps failed: RuntimeError: x"}}),
            "the profiled steps failed: RuntimeError: x");
  EXPECT_FALSE(peer_op_breakdown(nullptr, false).has_value());
}

// A compile peer's trace recorded on this project's Xeon (tests/fixtures/
// traces/README.md): inductor's C++ kernels, named by the peer, count in the
// bands of the work they do (LayerNorm and GELU in elementwise/norm, the
// loss's log_softmax in loss), and idle/other is under 10 % of the peer's
// step. Without the kernels' ranges their time is the compiled graph's own,
// in idle/other, as before the peer named them.
TEST(PeerBreakdown, CompilePeersCpuKernelsLandInTheirBands) {
  const auto dir = fs::path(LADDER_FIXTURES_DIR) / "traces";
  const double dt = 501.02694550059823;  // the peer's report, over the trace's two steps
  const nlohmann::json partial = {{"trace", (dir / "compile-peer-cpu-default.json").string()},
                                  {"step_dt_ms", {dt, dt}}};
  const nlohmann::json b = fields::to_json(peer_op_breakdown(partial, /*cuda=*/false, nullptr));
  ASSERT_TRUE(b.value("valid", false)) << b.dump().substr(0, 400);
  const auto& ms = b["categories_ms"];
  EXPECT_LT(ms["idle_other"].get<double>(), 0.10 * dt) << ms;
  const auto named = [&](const char* category, const char* part) {
    for (const auto& e : b["top_by_category"][category]) {
      const auto name = e["name"].get<std::string>();
      if (name.find("cpp_fused") != std::string::npos && name.find(part) != std::string::npos)
        return e["ms"].get<double>();
    }
    return 0.0;
  };
  EXPECT_GT(named("elementwise_norm", "native_layer_norm"), 0.0) << b["top_by_category"]["elementwise_norm"];
  EXPECT_GT(named("elementwise_norm", "gelu"), 0.0);
  EXPECT_GT(named("softmax_loss", "log_softmax"), 1.0) << b["top_by_category"]["softmax_loss"];
  // The same trace without the kernels' ranges: their time falls to the graph's range, idle/other.
  nlohmann::json trace = nlohmann::json::parse(std::ifstream(dir / "compile-peer-cpu-default.json"));
  auto& events = trace["traceEvents"];
  events.erase(std::remove_if(events.begin(), events.end(),
                              [](const nlohmann::json& e) {
                                return e["name"].get<std::string>().find("cpp_fused") != std::string::npos;
                              }),
               events.end());
  const auto unnamed = profiler::trace_breakdown(trace, /*device=*/false);
  EXPECT_GT(unnamed.total.ms[size_t(profiler::Category::kIdleOther)] / double(unnamed.steps),
            ms["idle_other"].get<double>() + 50.0);
}

}  // namespace
