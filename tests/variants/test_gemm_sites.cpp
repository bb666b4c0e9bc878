// tests/variants/test_gemm_sites.cpp: the epilogue GEMM sites of a step
// (variants/planners/gemm_sites.h): which there are, their cuBLASLt problems, and
// their FLOPs against the step's own count.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "variants/planners/gemm_sites.h"

namespace ladder {
namespace {

TEST(GemmSites, Gpt2At16x1024) {
  const ModelConfig gpt2;  // 124M: 12 layers, C 768
  const auto sites = gemm_sites(gpt2, 16 * 1024);
  std::vector<std::string> described;
  for (const auto& s : sites) described.push_back(s.describe());
  EXPECT_EQ(described, (std::vector<std::string>{
                           "attn.c_attn/forward m2304 n16384 k768 TN BIAS",
                           "attn.c_proj/forward m768 n16384 k768 TN BIAS",
                           "mlp.c_fc/forward+gelu m3072 n16384 k768 TN GELU_AUX_BIAS",
                           "mlp.c_proj/forward m768 n16384 k3072 TN BIAS",
                           "mlp.c_proj/weight+bias grad m3072 n768 k16384 NT BGRADB",
                           "mlp.c_proj/input grad+dgelu m3072 n16384 k768 NN DGELU",
                           "mlp.c_fc/weight+bias grad m768 n3072 k16384 NT BGRADB",
                           "attn.c_proj/weight+bias grad m768 n768 k16384 NT BGRADB",
                           "attn.c_attn/weight+bias grad m768 n2304 k16384 NT BGRADB",
                       }));
  for (const auto& s : sites) EXPECT_EQ(s.per_step, 12) << s.name();
}

// Forward, the four linears of a block are 2 N (I O) FLOPs each; backward,
// the sites cover every weight gradient and one input gradient (c_proj's):
// 2 + 4 of the 4 + 4 + 1 + 3 products of the 12 + 12 a block's linears cost.
TEST(GemmSites, FlopsAreTheLinearsOwn) {
  const ModelConfig m{2, 2, 64, 32, 100};
  const int64_t N = 3 * 32, C = 64;
  double fwd = 0, bwd = 0;
  for (const auto& s : gemm_sites(m, N))
    (s.role == GemmRole::kForwardBias || s.role == GemmRole::kForwardBiasGelu ? fwd : bwd) += s.flops();
  const double per_linear = 2.0 * N * C * C;  // a C x C linear over N rows
  EXPECT_DOUBLE_EQ(fwd, per_linear * (3 + 1 + 4 + 4));
  EXPECT_DOUBLE_EQ(bwd, per_linear * (4 + 4 + 4 + 1 + 3));  // dW c_proj(mlp), dgelu, dW c_fc, c_proj(attn), c_attn
}

// Without it, c_fc's forward is a BIAS GEMM and c_proj's input gradient no
// site (GELU's derivative runs apart); c_fc's weight-and-bias gradient still is.
TEST(GemmSites, WithoutTheGeluEpilogueCfcIsABiasGemmAndItsGradientNone) {
  const auto sites = gemm_sites(ModelConfig{}, 1024, /*gelu_epilogue=*/false);
  ASSERT_EQ(sites.size(), 8u);
  EXPECT_EQ(sites[2].describe(), "mlp.c_fc/forward m3072 n1024 k768 TN BIAS");
  EXPECT_EQ(sites[5].describe(), "mlp.c_fc/weight+bias grad m768 n3072 k1024 NT BGRADB");
  for (const auto& s : sites) EXPECT_NE(s.role, GemmRole::kInputGradDgelu) << s.describe();
}

// The one list: every GEMM of step_gemms is one site of step_sites (the CPU
// planner's), in the fused backward's order (a layer's weight gradient before
// its input gradient), with the same shape and count; gemm_sites (the CUDA
// planner's) is its epilogue sites, in that order.
TEST(GemmSites, StepSitesAreTheStepsGemms) {
  const ModelConfig gpt2;
  const int64_t rows = 4 * 64, vocab = 50304;
  const auto gemms = step_gemms(gpt2, rows, vocab);
  const auto sites = step_sites(gpt2, rows, vocab);
  ASSERT_EQ(sites.size(), gemms.size());
  std::vector<std::string> names;
  for (const auto& s : sites) names.push_back(s.name());
  EXPECT_EQ(names, (std::vector<std::string>{
                       "attn.c_attn/forward", "attn.c_proj/forward", "mlp.c_fc/forward+gelu", "mlp.c_proj/forward",
                       "lm_head/forward", "lm_head/weight grad", "lm_head/input grad", "mlp.c_proj/weight+bias grad",
                       "mlp.c_proj/input grad+dgelu", "mlp.c_fc/weight+bias grad", "mlp.c_fc/input grad",
                       "attn.c_proj/weight+bias grad", "attn.c_proj/input grad", "attn.c_attn/weight+bias grad",
                       "attn.c_attn/input grad"}));
  for (const auto& g : gemms) {
    const auto it = std::find_if(sites.begin(), sites.end(), [&](const GemmSite& s) {
      return s.layer == g.layer && s.rows == g.rows && s.in == g.in && s.out == g.out && s.per_step == g.per_micro_step &&
             site_of(g, true).role == s.role;
    });
    ASSERT_NE(it, sites.end()) << g.name();
    EXPECT_DOUBLE_EQ(it->flops(), g.flops()) << g.name();
  }
  EXPECT_EQ(sites[4].describe(), "lm_head/forward m50304 n256 k768 TN DEFAULT");
  EXPECT_EQ(sites[5].describe(), "lm_head/weight grad m768 n50304 k256 NT DEFAULT");
  EXPECT_EQ(sites[6].describe(), "lm_head/input grad m768 n256 k50304 NN DEFAULT");
  std::vector<std::string> epilogue, cuda;
  for (const auto& s : sites)
    if (has_epilogue(s.role)) epilogue.push_back(s.describe());
  for (const auto& s : gemm_sites(gpt2, rows)) cuda.push_back(s.describe());
  EXPECT_EQ(epilogue, cuda);
  // Without the GELU epilogue c_proj's input gradient is a plain one.
  EXPECT_EQ(step_sites(gpt2, rows, vocab, false)[8].name(), "mlp.c_proj/input grad");
}

}  // namespace
}  // namespace ladder
