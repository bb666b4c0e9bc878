// tests/bench/test_mfu.cpp: the FLOPs formula against hand-computed values, and the
// datasheet table's device matching (peak TFLOP/s and memory bandwidth).
#include <gtest/gtest.h>

#include "bench/measure/roofline/mfu.h"
#include "variants/config/config.h"

namespace ladder {
namespace {

TEST(Mfu, FlopsPerTokenForGpt2SmallMatchesHandComputation) {
  // N = 124,439,808 - 1024*768 = 123,653,376; 6N = 741,920,256
  // 12*L*H*Q*T = 12*12*12*64*1024 = 113,246,208; total 855,166,464.
  const ModelConfig m = find_preset("gpt2-124m").model;
  EXPECT_EQ(flops_per_token(m, 123'653'376, 1024), 855'166'464);
  // At T = 64 the attention term is 16x smaller: 741,920,256 + 7,077,888.
  EXPECT_EQ(flops_per_token(m, 123'653'376, 64), 748'998'144);
}

TEST(Mfu, MicroBenchmarkFlopsMatchHandComputation) {
  // c_attn at B*T = 1024 tokens: 2 * 1024 * 2304 * 768 = 3,623,878,656.
  EXPECT_EQ(matmul_flops(1024, 2304, 768), 3'623'878'656);
  // One GPT-2-small layer at T = 1024: 12 * 12 * 64 * 1024 = 9,437,184 per token,
  // and L of them make the attention term of flops_per_token (113,246,208 / 12).
  EXPECT_EQ(attention_flops_per_token(12, 64, 1024), 9'437'184);
  EXPECT_EQ(12 * attention_flops_per_token(12, 64, 1024), 113'246'208);
  // Causal: 1024 queries meet 1 + 2 + ... + 1024 = 524,800 keys, 4 H Q FLOPs
  // forward and 8 H Q backward a pair: 12 * 12 * 64 * 524,800 / 1024 tokens.
  EXPECT_EQ(causal_attention_flops_per_token(12, 64, 1024), 4'723'200);
  EXPECT_EQ(causal_attention_flops_per_token(12, 64, 1024) * 1024, int64_t(12) * 12 * 64 * 524'800);
}

TEST(Mfu, MfuPercentMatchesHandComputation) {
  // 10,000 tok/s * 855,166,464 FLOP/tok = 8.55166464e12 FLOP/s; / 312e12 = 2.7409181538%.
  EXPECT_NEAR(mfu_pct(10'000.0, 855'166'464, 312.0), 2.7409181538, 1e-9);
}

TEST(PeakTable, MatchesCudaDeviceNames) {
  struct Case {
    const char* name;
    Precision p;
    const char* label;
    double tflops;
  };
  const Case cases[] = {
      {"NVIDIA A100-SXM4-80GB", Precision::kTF32, "A100 80GB SXM", 156.0},
      {"NVIDIA A100-SXM4-40GB", Precision::kBF16, "A100 40GB SXM", 312.0},
      {"NVIDIA A100-PCIE-40GB", Precision::kBF16, "A100 40GB PCIe", 312.0},
      {"NVIDIA A100 80GB PCIe", Precision::kFP32, "A100 80GB PCIe", 19.5},
      {"NVIDIA H100 80GB HBM3", Precision::kBF16, "H100 SXM", 989.4},
      {"NVIDIA H100 PCIe", Precision::kTF32, "H100 PCIe", 378.0},
      {"NVIDIA H100 NVL", Precision::kBF16, "H100 NVL", 835.5},
      {"NVIDIA H200", Precision::kFP32, "H200 SXM", 67.0},
      {"NVIDIA H200 NVL", Precision::kBF16, "H200 NVL", 835.5},
      {"NVIDIA L4", Precision::kBF16, "L4", 121.0},
      {"NVIDIA A10G", Precision::kTF32, "A10G", 62.5},
      {"NVIDIA GeForce RTX 4090", Precision::kBF16, "RTX 4090", 165.2},
  };
  for (const auto& c : cases) {
    auto peak = datasheet_peak(c.name, c.p);
    ASSERT_TRUE(peak.has_value()) << c.name;
    EXPECT_EQ(peak->device, c.label) << c.name;
    EXPECT_DOUBLE_EQ(peak->tflops, c.tflops) << c.name;
    EXPECT_FALSE(peak->source.empty());
  }
}

TEST(PeakTable, MemoryBandwidthOfEachDevice) {
  // GB/s as the datasheets give them (TB/s x 1000); A100 40 GB and 80 GB differ.
  struct Case {
    const char* name;
    const char* label;
    double gbps;
  };
  const Case cases[] = {
      {"NVIDIA H100 80GB HBM3", "H100 SXM", 3350.0},
      {"NVIDIA H100 PCIe", "H100 PCIe", 2000.0},
      {"NVIDIA H100 NVL", "H100 NVL", 3900.0},
      {"NVIDIA H200", "H200 SXM", 4800.0},
      {"NVIDIA H200 NVL", "H200 NVL", 4800.0},
      {"NVIDIA A100-SXM4-80GB", "A100 80GB SXM", 2039.0},
      {"NVIDIA A100 80GB PCIe", "A100 80GB PCIe", 1935.0},
      {"NVIDIA A100-PCIE-40GB", "A100 40GB PCIe", 1555.0},
      {"NVIDIA A100-SXM4-40GB", "A100 40GB SXM", 1555.0},
      {"NVIDIA L4", "L4", 300.0},
      {"NVIDIA A10G", "A10G", 600.0},
      {"NVIDIA GeForce RTX 4090", "RTX 4090", 1008.0},
  };
  for (const auto& c : cases) {
    auto bw = datasheet_bandwidth(c.name);
    ASSERT_TRUE(bw.has_value()) << c.name;
    EXPECT_EQ(bw->device, c.label) << c.name;
    EXPECT_DOUBLE_EQ(bw->gbps, c.gbps) << c.name;
    EXPECT_FALSE(bw->source.empty());
  }
  EXPECT_FALSE(datasheet_bandwidth("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz").has_value());
  EXPECT_FALSE(datasheet_bandwidth("NVIDIA L40S").has_value());
}

TEST(PeakTable, UnknownDevicesGetNoGuess) {
  EXPECT_FALSE(datasheet_peak("NVIDIA L40S", Precision::kBF16).has_value());
  EXPECT_FALSE(datasheet_peak("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", Precision::kFP32));
  EXPECT_FALSE(datasheet_peak("Tesla V100-SXM2-16GB", Precision::kFP32).has_value());
}

}  // namespace
}  // namespace ladder
