// bench/measure/mfu.cpp: the MFU formula and the dense peak table (see mfu.h).
#include "bench/measure/mfu.h"

#include <regex>
#include <vector>

namespace ladder {

int64_t flops_per_token(const ModelConfig& m, int64_t n_params_without_wpe, int64_t seq) {
  const int64_t Q = m.n_embd / m.n_head;
  return 6 * n_params_without_wpe + m.n_layer * attention_flops_per_token(m.n_head, Q, seq);
}

int64_t gpt2_params_without_wpe(const ModelConfig& m, int64_t model_vocab) {
  const int64_t C = m.n_embd;
  return model_vocab * C + m.n_layer * (12 * C * C + 13 * C) + 2 * C;
}

int64_t matmul_flops(int64_t m, int64_t n, int64_t k) { return 2 * m * n * k; }

int64_t attention_flops_per_token(int64_t n_head, int64_t head_size, int64_t seq) {
  return 12 * n_head * head_size * seq;
}

double mfu_pct(double tokens_per_s, int64_t flops_per_token, double peak_tflops) {
  return 100.0 * tokens_per_s * double(flops_per_token) / (peak_tflops * 1e12);
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFP32: return "fp32";
    case Precision::kTF32: return "tf32";
    case Precision::kBF16: return "bf16";
  }
  return "?";
}

namespace {
struct Row {
  const char* pattern;  // matched case-insensitively against the CUDA device name
  const char* label;
  double fp32, tf32, bf16;  // dense TFLOPS: FP32 (CUDA cores), TF32 and BF16 tensor cores
  const char* source;
};

// Dense peaks. Datasheets quote tensor-core figures "with sparsity"; those
// are halved here. Order matters: more specific patterns first.
const std::vector<Row>& table() {
  static const std::vector<Row> kRows = {
      // NVIDIA H200 Tensor Core GPU datasheet (2024), H200 NVL column:
      // FP32 60, TF32 835*, BF16 1,671* (* with sparsity).
      {R"(H200.*NVL)", "H200 NVL", 60.0, 417.5, 835.5, "NVIDIA H200 datasheet (NVL), sparse/2"},
      // Same datasheet, H200 SXM column: FP32 67, TF32 989*, BF16 1,979*.
      {R"(H200)", "H200 SXM", 67.0, 494.5, 989.5, "NVIDIA H200 datasheet (SXM), sparse/2"},
      // NVIDIA H100 Tensor Core GPU datasheet (2023), H100 NVL column:
      // FP32 60, TF32 835*, BF16 1,671*.
      {R"(H100.*NVL)", "H100 NVL", 60.0, 417.5, 835.5, "NVIDIA H100 datasheet (NVL), sparse/2"},
      // NVIDIA H100 Tensor Core architecture whitepaper, table 3, H100 PCIe:
      // FP32 51.2, TF32 378/756, BF16 756/1513 (dense/sparse).
      {R"(H100.*PCIe)", "H100 PCIe", 51.2, 378.0, 756.0, "NVIDIA H100 whitepaper table 3 (PCIe)"},
      // Same table, H100 SXM5: FP32 66.9, TF32 494.7/989.4, BF16 989.4/1978.9.
      {R"(H100)", "H100 SXM", 66.9, 494.7, 989.4, "NVIDIA H100 whitepaper table 3 (SXM5)"},
      // NVIDIA A100 Tensor Core GPU datasheet (2021), PCIe and SXM columns are
      // equal: FP32 19.5, TF32 156 (312*), BF16 312 (624*).
      {R"(A100.*PCIE)", "A100 PCIe", 19.5, 156.0, 312.0, "NVIDIA A100 datasheet (PCIe)"},
      {R"(A100)", "A100 SXM", 19.5, 156.0, 312.0, "NVIDIA A100 datasheet (SXM)"},
      // NVIDIA L4 datasheet (2023): FP32 30.3, TF32 120*, BF16 242*.
      {R"(\bL4\b)", "L4", 30.3, 60.0, 121.0, "NVIDIA L4 datasheet, sparse/2"},
      // The A10G is AWS's variant of the A10; NVIDIA publishes no A10G sheet.
      // NVIDIA A10 datasheet: FP32 31.2, TF32 62.5 (125*), BF16 125 (250*).
      {R"(A10G)", "A10G", 31.2, 62.5, 125.0, "NVIDIA A10 datasheet (A10G has none of its own)"},
      // NVIDIA Ada Lovelace architecture whitepaper v1.01, appendix table, RTX
      // 4090: FP32 82.6, TF32 82.6/165.2, BF16 (FP32 accumulate) 165.2/330.4.
      {R"(RTX 4090)", "RTX 4090", 82.6, 82.6, 165.2, "NVIDIA Ada whitepaper v1.01 appendix"},
  };
  return kRows;
}
}  // namespace

std::optional<PeakEntry> datasheet_peak(const std::string& device_name, Precision p) {
  for (const auto& row : table()) {
    if (!std::regex_search(device_name, std::regex(row.pattern, std::regex::icase))) continue;
    const double tflops = p == Precision::kFP32 ? row.fp32 : p == Precision::kTF32 ? row.tf32
                                                                                   : row.bf16;
    return PeakEntry{row.label, tflops, row.source};
  }
  return std::nullopt;
}

}  // namespace ladder
