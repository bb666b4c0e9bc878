// tests/reports/test_kernel_compare.cpp: `ladder compare --kernels`. Kernel names
// fall into families across GPUs and builds; a report holds its whole kernel
// table; the families and bands of two inputs are compared process by
// process, each difference with its interval, the rest added or removed;
// the operator slowdown hook slows the call it names and nothing else.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "bench/measure/observers/op_slowdown.h"
#include "profiler/common/config_error.h"
#include "profiler/common/fields.h"
#include "profiler/trace/kineto_session.h"
#include "profiler/trace/op_categories.h"
#include "reports/model/comparison/comparison.h"
#include "reports/model/comparison/kernel_comparison.h"
#include "reports/model/comparison/kernel_family.h"
#include "reports/render/documents/comparison_document.h"
#include "reports/render/reporter.h"
#include "reports/stats/inference.h"
#include "tests/support/complete_report.h"

namespace ladder {
namespace {

using nlohmann::json;
namespace pf = profiler;

TEST(KernelFamily, TheSameGemmTunedForTwoChipsIsOneFamily) {
  // The committed H100 (2026-11-27) and H200 (2026-11-29) checks' fused-adamw.
  EXPECT_EQ(kernel_family("nvjet_sm90_tst_128x192_64x5_2x1_v_bz_coopB_geluauxbias_auxt_TNN"),
            kernel_family("nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopA_geluauxbias_auxt_TNN"));
  EXPECT_EQ(kernel_family("nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopA_geluauxbias_auxt_TNN"),
            "nvjet_tst_geluauxbias_auxt_TNN");
  // The layout and the epilogue are the work, and stay.
  EXPECT_NE(kernel_family("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"),
            kernel_family("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"));
  EXPECT_EQ(kernel_family("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_1x4x1_"
                          "cga1x1x1_kernel0_0"),
            "cudnn_generated_fort_native_sdpa_flash_bprop_wgmma_f16_kernel0");
  EXPECT_EQ(kernel_family("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_aux_bf16_"
                          "dgelu_execute_segment_k_off_kernel__5x_cublas"),
            "xmma_gemm_bf16bf16_bf16f32_f32_nn_n_aux_bf16_dgelu_execute_segment_k_off_kernel_cublas");
  EXPECT_EQ(kernel_family("ampere_sgemm_128x64_nn"), "sgemm_nn");
  EXPECT_EQ(kernel_family("cutlass_80_tensorop_s1688gemm_128x128_16x5_nn_align4"),
            "cutlass_tensorop_s1688gemm_nn_align4");
  EXPECT_EQ(kernel_family("sm_80_xmma_gemm"), "xmma_gemm");
}

TEST(KernelFamily, CppNamesLoseTheirTemplateArgumentsAndParameters) {
  EXPECT_EQ(kernel_family("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                          "std::array<char*, 3ul> >"),
            "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(kernel_family("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                          "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::"),
            "at::native::multi_tensor_apply_kernel");  // cut at 160 characters by an older report
  EXPECT_EQ(kernel_family("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda("
                          "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()..."),
            "at::native::unrolled_elementwise_kernel");
  EXPECT_EQ(kernel_family("ladder::fused::cuda::(anonymous namespace)::add_layer_norm_backward_params_final_kernel"),
            "ladder::fused::cuda::add_layer_norm_backward_params_final_kernel");
  EXPECT_EQ(kernel_family("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>"),
            "softmax_warp_forward");
  // A wrapper's kernel is its first template argument.
  EXPECT_EQ(kernel_family("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"
                          "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)"),
            "cutlass::Kernel2<cutlass_wmma_tensorop_bf16_s161616gemm_bf16_tn_align8>");
  EXPECT_EQ(kernel_family("autograd::engine::evaluate_function: torch::autograd::CppNode<ladder::fused::detail::"
                          "AddLayerNormFunction>"),
            "autograd::engine::evaluate_function: torch::autograd::CppNode<ladder::fused::detail::"
            "AddLayerNormFunction>");
  // Operators, autograd nodes and copies are their own family.
  EXPECT_EQ(kernel_family("aten::addmm"), "aten::addmm");
  EXPECT_EQ(kernel_family("autograd::engine::evaluate_function: AddmmBackward0"),
            "autograd::engine::evaluate_function: AddmmBackward0");
  EXPECT_EQ(kernel_family("Memset"), "Memset");
  EXPECT_EQ(kernel_family("detach_"), "detach_");  // in place: another operator than detach
  EXPECT_EQ(kernel_family("_to_copy"), "_to_copy");
  EXPECT_EQ(kernel_family("triton_poi_fused_nll_loss_forward_slice_..."), "triton_poi_fused_nll_loss_forward_slice");
  // A triton kernel's index is not its work.
  EXPECT_EQ(kernel_family("triton_poi_fused_add_native_layer_norm_3"), "triton_poi_fused_add_native_layer_norm");
}

TEST(KernelTable, TheReportHoldsEveryNameWholePerStep) {
  pf::Breakdown total;
  const std::string long_name = "_Z" + std::string("3foo") + "v";  // foo(), demangled "foo()"
  const std::string cut = std::string(200, 'k');                   // longer than top_by_category keeps
  total.by_name[size_t(pf::Category::kGemm)]["aten::mm"] = {4.0, 6};
  total.by_name[size_t(pf::Category::kGemm)][cut] = {1.0, 2};
  total.by_name[size_t(pf::Category::kElementwiseNorm)][long_name] = {2.0, 2};
  total.by_name[size_t(pf::Category::kElementwiseNorm)]["foo(int)"] = {0.5, 2};  // not mangled: as it is
  const pf::OpBreakdownSection s = pf::breakdown_section("test", total, 2, 10.0, 1);
  ASSERT_TRUE(s.kernels);
  const auto& k = *s.kernels;
  ASSERT_EQ(k.size(), 4u) << fields::to_json(k).dump();
  EXPECT_EQ(k[0].name, "aten::mm");
  EXPECT_EQ(k[0].band, "gemm");
  EXPECT_DOUBLE_EQ(k[0].ms, 2.0);     // per step
  EXPECT_DOUBLE_EQ(k[0].calls, 3.0);  // per step
  EXPECT_EQ(k[1].name, "foo");        // demangled, without its parameter list
  EXPECT_EQ(k[1].band, "elementwise_norm");
  EXPECT_EQ(k[2].name, cut);  // whole
  // top_by_category keeps 1 per band here: the whole table is not a sample.
  EXPECT_EQ(s.top_by_category->values[size_t(pf::Category::kGemm)].size(), 1u);
}

TEST(KernelDifference, WelchIntervalOfADifferenceOfMeans) {
  // scipy.stats.ttest_ind([1, 2, 3], [4, 5, 7], equal_var=False): t = -3.1623, df = 3.4483, p = 0.0426;
  // the interval is the difference +- t(0.975, df) * se.
  const DifferenceInterval d = difference_of_independent({1, 2, 3}, {4, 5, 7});
  ASSERT_TRUE(d.has_interval);
  EXPECT_NEAR(d.diff, 10.0 / 3.0, 1e-12);
  EXPECT_NEAR(d.df, 3.4483, 1e-3);
  EXPECT_NEAR(d.p_value, 0.0426, 1e-3);
  const double half = student_t_quantile(0.975, d.df) * std::sqrt(1.0 / 3.0 + 7.0 / 9.0);
  EXPECT_NEAR(d.lo, d.diff - half, 1e-9);
  EXPECT_NEAR(d.hi, d.diff + half, 1e-9);
  // Paired by round: scipy.stats.ttest_rel([1, 2, 3], [2, 4, 5]): t = 5, df = 2, p = 0.0377.
  const DifferenceInterval paired = difference_of_paired({1, 2, 3}, {2, 4, 5});
  EXPECT_NEAR(paired.diff, 5.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(paired.df, 2.0);
  EXPECT_NEAR(paired.p_value, 0.0377, 1e-4);
  EXPECT_NEAR(paired.hi - paired.diff, student_t_quantile(0.975, 2) / 3.0, 1e-9);
  // One value a side: the difference, no interval.
  const DifferenceInterval one = difference_of_independent({1}, {3});
  EXPECT_FALSE(one.has_interval);
  EXPECT_DOUBLE_EQ(one.diff, 2.0);
}

// One process's ok report whose breakdown holds `kernels` (name -> ms, in
// `band`), its categories the sums.
RungReport process(const std::vector<std::tuple<std::string, std::string, double>>& kernels, bool whole = true) {
  RungReport r = complete_report(20.0);
  pf::OpBreakdownSection b;
  b.source = "test";
  b.valid = true;
  pf::PerCategory<double> cats;
  pf::PerCategory<std::vector<pf::NamedTotal>> top;
  std::vector<pf::KernelRow> rows;
  for (const auto& [name, band, ms] : kernels) {
    for (size_t c = 0; c < pf::kCategoryCount; ++c)
      if (band == pf::category_key(pf::Category(c))) {
        cats.values[c] += ms;
        top.values[c].push_back({name, ms, 1});
      }
    rows.push_back({name, band, ms, 1});
  }
  b.categories_ms = cats;
  b.top_by_category = top;
  if (whole) b.kernels = rows;
  r.op_breakdown = std::optional<pf::OpBreakdownSection>(b);
  return r;
}

// An input of one process per table, one cell "fp32".
LoadedRun input(const std::string& label, const std::vector<RungReport>& processes) {
  LoadedRun g;
  g.label = g.path = label;
  for (const auto& p : processes) {
    LoadedRun r;
    r.label = label;
    r.cells = {"fp32"};
    r.reports = {p};
    g.repeats.push_back(r);
  }
  g.cells = g.repeats.front().cells;
  g.reports = g.repeats.front().reports;
  if (processes.size() == 1) g.repeats.clear();
  return g;
}

using Table3 = std::vector<std::tuple<std::string, std::string, double>>;

// Three processes a side; A's gelu 2 ms, B's `gelu_b`; mm the same up to jitter;
// A alone runs "aten::old", B alone "aten::new"; aten::empty counts in
// another band in each.
std::pair<LoadedRun, LoadedRun> two_inputs(double gelu_b) {
  std::vector<RungReport> a, b;
  const double jitter[] = {-0.01, 0.0, 0.012};
  for (double j : jitter) {
    a.push_back(process({{"aten::mm", "gemm", 10 + j}, {"aten::gelu", "elementwise_norm", 2 + j / 4},
                         {"aten::add", "elementwise_norm", 1 - j / 4}, {"aten::old", "memcpy_memset", 0.3},
                         {"aten::empty", "gemm", 0.01}}));
    b.push_back(process({{"aten::mm", "gemm", 10 - j}, {"aten::gelu", "elementwise_norm", gelu_b + j / 4},
                         {"aten::add", "elementwise_norm", 1 + j / 4}, {"aten::new", "idle_other", 0.2},
                         {"aten::empty", "optimizer", 0.01}}));
  }
  return {input("A", a), input("B", b)};
}

const KernelFamilyRow& row(const RungKernels& r, const std::string& family, bool band = false) {
  const auto& rows = band ? r.bands : r.families;
  const auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& x) { return x.family == family; });
  if (it == rows.end()) throw std::runtime_error("no row " + family);
  return *it;
}

TEST(KernelCompare, TheSlowedFamilyAndItsBandAreFlaggedAndNothingElse) {
  const auto [a, b] = two_inputs(2.6);  // gelu 30 % slower in B
  const KernelComparison k = compare_kernels({a, b}, {"fp32"}, 0.05, 5.0);
  ASSERT_EQ(k.rungs.size(), 1u);
  const RungKernels& r = k.rungs[0];
  EXPECT_EQ(r.sources, (std::vector<std::string>{"kernels", "kernels"}));
  const auto& gelu = *row(r, "aten::gelu").vs_baseline[1];
  EXPECT_EQ(gelu.verdict, "slower") << fields::to_json(r).dump();
  EXPECT_NEAR(gelu.diff_ms, 0.6, 1e-9);
  EXPECT_LT(*gelu.lo_ms, 0.6);
  EXPECT_GT(*gelu.lo_ms, 0.5);
  EXPECT_GT(*gelu.hi_ms, 0.6);
  EXPECT_NE(row(r, "aten::mm").vs_baseline[1]->verdict, "slower");
  EXPECT_FALSE(row(r, "aten::mm").vs_baseline[1]->flagged);
  EXPECT_FALSE(row(r, "aten::add").vs_baseline[1]->flagged);
  EXPECT_EQ(row(r, "aten::old").vs_baseline[1]->verdict, "removed");
  EXPECT_EQ(row(r, "aten::new").vs_baseline[1]->verdict, "added");
  EXPECT_EQ(row(r, "aten::new").inputs[0].processes, 0);
  EXPECT_EQ(row(r, "aten::new").inputs[1].processes, 3);
  // The largest difference first; the baseline's row of its own is null.
  EXPECT_EQ(r.families.front().family, "aten::gelu");
  EXPECT_FALSE(r.families.front().vs_baseline[0]);
  // An operator counted in another band moved: not added, not removed, not flagged.
  int moved = 0;
  for (const auto& f : r.families) {
    if (f.family != "aten::empty") continue;
    EXPECT_EQ(f.vs_baseline[1]->verdict, "moved") << f.band;
    ++moved;
  }
  EXPECT_EQ(moved, 2);
  EXPECT_EQ(r.families_flagged, 3);
  EXPECT_EQ(r.families_compared, 7);
  // Its band, with an interval; the gemm band is not flagged.
  const auto& elementwise = *row(r, "elementwise_norm", true).vs_baseline[1];
  EXPECT_EQ(elementwise.verdict, "slower");
  EXPECT_TRUE(elementwise.lo_ms && *elementwise.lo_ms > 0);
  EXPECT_FALSE(row(r, "gemm", true).vs_baseline[1]->flagged);
  EXPECT_THROW(row(r, "communication", true), std::runtime_error);  // no input ran it: no row
}

TEST(KernelCompare, TheSameTablesFlagNothing) {
  const auto [a, b] = two_inputs(2.0);
  const KernelComparison k = compare_kernels({a, b}, {"fp32"}, 0.05, 5.0);
  for (const auto& f : k.rungs[0].families) {
    if (f.family == "aten::old" || f.family == "aten::new" || f.family == "aten::empty") continue;
    EXPECT_FALSE(f.vs_baseline[1]->flagged) << fields::to_json(f).dump();
  }
}

TEST(KernelCompare, AConsistentChangeTooSmallToMatterToTheStepIsWithinNoise) {
  // 28 calls of a 4 us operator, 0.8 us slower in every process of B (a
  // callback's cost per call): real, and 20 % of the family, but 0.01 % of
  // a 10 ms step; the floor is 0.1 % of it.
  std::vector<RungReport> a, b;
  for (double j : {-0.00001, 0.0, 0.00001}) {
    a.push_back(process({{"aten::mm", "gemm", 10 + j}, {"aten::detach_", "optimizer", 0.004 + j}}));
    b.push_back(process({{"aten::mm", "gemm", 10 - j}, {"aten::detach_", "optimizer", 0.0048 + j}}));
  }
  const KernelComparison k = compare_kernels({input("A", a), input("B", b)}, {"fp32"}, 0.05, 5.0);
  const RungKernels& r = k.rungs[0];
  EXPECT_NEAR(r.floor_ms, 0.010004, 1e-9);
  const auto& d = *row(r, "aten::detach_").vs_baseline[1];
  EXPECT_LT(*d.p_holm, 0.05) << fields::to_json(d).dump();
  EXPECT_EQ(d.verdict, "within noise");
  EXPECT_FALSE(d.flagged);
}

TEST(KernelCompare, OneProcessASideShowsTheDifferenceWithoutAVerdict) {
  const LoadedRun a = input("A", {process({{"aten::mm", "gemm", 10}})});
  const LoadedRun b = input("B", {process({{"aten::mm", "gemm", 12}})});
  const KernelComparison k = compare_kernels({a, b}, {"fp32"}, 0.05, 5.0);
  const auto& d = *row(k.rungs[0], "aten::mm").vs_baseline[1];
  EXPECT_EQ(d.verdict, "cannot judge");
  EXPECT_DOUBLE_EQ(d.diff_ms, 2.0);
  EXPECT_FALSE(d.lo_ms);
}

TEST(KernelCompare, AnOlderReportIsReadFromItsLargestNamesAndSaysSo) {
  const LoadedRun a = input("A", {process({{"aten::mm", "gemm", 10}}, /*whole=*/false)});
  const LoadedRun b = input("B", {process({{"aten::mm", "gemm", 12}})});
  const KernelComparison k = compare_kernels({a, b}, {"fp32"}, 0.05, 5.0);
  EXPECT_EQ(k.rungs[0].sources, (std::vector<std::string>{"top_by_category", "kernels"}));
  // No rung without a breakdown in the baseline.
  RungReport none;
  none.status = "ok";
  EXPECT_TRUE(compare_kernels({input("A", {none}), b}, {"fp32"}, 0.05, 5.0).rungs.empty());
}

TEST(KernelCompare, EveryFormatShowsTheTablesAndTheJsonRoundTrips) {
  const auto [a, b] = two_inputs(2.6);
  CompareOptions o;
  o.kernels = true;
  o.force = true;
  const json cmp = compare_runs({a, b}, o);
  ASSERT_TRUE(cmp.contains("kernels")) << cmp.dump();
  const auto back = fields::from_json<KernelComparison>(cmp["kernels"], "test");
  EXPECT_EQ(fields::to_json(back), cmp["kernels"]);
  const Document doc = comparison_document(comparison_from_json(cmp));
  const std::string text = find_reporter("--format", "text", DocumentKind::kComparison).render(doc, {});
  EXPECT_NE(text.find("fp32: kernels (CUDA) or operators (CPU) by family"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::gelu (slower, +0.600 ["), std::string::npos) << text;
  EXPECT_NE(text.find("largest gap elementwise_norm +0.600"), std::string::npos) << text;
  const std::string md = find_reporter("--format", "markdown", DocumentKind::kComparison).render(doc, {});
  EXPECT_NE(md.find("fp32: bands, ms per step"), std::string::npos) << md;
  const std::string html = find_reporter("--format", "html", DocumentKind::kComparison).render(doc, {});
  EXPECT_NE(html.find("chart-kernels-fp32"), std::string::npos);
  // Without --kernels, nothing of it.
  EXPECT_FALSE(compare_runs({a, b}, CompareOptions{}).contains("kernels"));
}

TEST(OpSlowdownHook, AMalformedValueIsRefusedNamingTheVariable) {
  const std::string too_long = std::string(128, 'x') + ":50";  // the name holds at most 127
  for (const std::string& bad :
       {std::string("aten::gelu"), std::string("aten::gelu:"), std::string(":50"), std::string("aten::gelu:x"),
        std::string("aten::gelu:0"), std::string("aten::gelu:-5"), too_long}) {
    setenv(kTestSlowOpEnv, bad.c_str(), 1);
    try {
      test_slow_op();
      ADD_FAILURE() << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(kTestSlowOpEnv), std::string::npos) << e.what();
    }
  }
  setenv(kTestSlowOpEnv, "aten::gelu:50", 1);
  const auto spec = test_slow_op();
  ASSERT_TRUE(spec);
  EXPECT_STREQ(spec->op.data(), "aten::gelu");
  EXPECT_DOUBLE_EQ(spec->pct, 50);
  EXPECT_EQ(spec->text(), "aten::gelu:50");
  setenv(kTestSlowOpEnv, (std::string(127, 'x') + ":50").c_str(), 1);
  EXPECT_EQ(std::string(test_slow_op()->op.data()), std::string(127, 'x'));
  unsetenv(kTestSlowOpEnv);
  EXPECT_FALSE(test_slow_op());
}

// The shortest profiled call of each named operator, in ns.
std::map<std::string, int64_t> shortest_calls(const std::function<void()>& work) {
  pf::KinetoSession session({false, false, false});
  session.start();
  work();
  const auto result = session.stop();
  std::map<std::string, int64_t> shortest;
  for (const auto& ev : result->events()) {
    const int64_t d = int64_t(ev.endNs()) - int64_t(ev.startNs());
    auto [it, fresh] = shortest.emplace(ev.name(), d);
    if (!fresh) it->second = std::min(it->second, d);
  }
  return shortest;
}

TEST(OpSlowdownHook, TheSpinFallsInsideTheCallItSlows) {
  // Where the spin lands is behaviour, not speed: inside the call, the
  // profiler sees the operator's shortest call 5x as long (400 % more); had
  // it landed outside, the shortest call would not move. The bound leaves
  // room for a noisy machine either way.
  // One thread: with two on a loaded machine every call waits for the other
  // at the parallel region's end (measured: every call 7 ms, not 40 us).
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const torch::Tensor x = torch::randn({256, 256});
  auto work = [&] {
    for (int i = 0; i < 20; ++i) {
      (void)torch::gelu(x);
      (void)torch::relu(x);
    }
  };
  const auto before = shortest_calls(work);
  std::map<std::string, int64_t> after, unhooked;
  {
    // Every process adds the callback; with no operator named it slows nothing.
    const OpSlowdown none(std::nullopt);
    unhooked = shortest_calls(work);
  }
  setenv(kTestSlowOpEnv, "aten::gelu:400", 1);
  const auto spec = test_slow_op();
  unsetenv(kTestSlowOpEnv);
  {
    const OpSlowdown slow(spec);
    after = shortest_calls(work);
  }
  EXPECT_LT(double(unhooked.at("aten::gelu")), 3.0 * double(before.at("aten::gelu")));
  ASSERT_TRUE(before.count("aten::gelu") && after.count("aten::gelu"));
  EXPECT_GT(double(after.at("aten::gelu")), 3.0 * double(before.at("aten::gelu")));
  EXPECT_LT(double(after.at("aten::relu")), 3.0 * double(before.at("aten::relu")));
  // Gone with the hook.
  const auto later = shortest_calls(work);
  EXPECT_LT(double(later.at("aten::gelu")), 3.0 * double(before.at("aten::gelu")));
  at::set_num_threads(threads);
}

}  // namespace
}  // namespace ladder
