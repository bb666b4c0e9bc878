// bench/measure/roofline/mfu.cpp: the MFU formula and the dense peak table (see mfu.h).
#include "bench/measure/roofline/mfu.h"

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

int64_t causal_attention_flops_per_token(int64_t n_head, int64_t head_size, int64_t seq) {
  return 6 * n_head * head_size * (seq + 1);
}

double mfu_pct(double tokens_per_s, int64_t flops_per_token, double peak_tflops) {
  return 100.0 * tokens_per_s * double(flops_per_token) / (peak_tflops * 1e12);
}

namespace {
struct Row {
  const char* pattern;  // matched case-insensitively against the CUDA device name
  const char* label;
  double fp32, tf32, bf16;  // dense TFLOPS: FP32 (CUDA cores), TF32 and BF16 tensor cores
  double memory_gbps;       // memory bandwidth, GB/s (1e9 bytes/s; the sheets' TB/s x 1000)
  const char* source;
};

// Dense peaks and memory bandwidth. Datasheets quote tensor-core figures
// "with sparsity"; those are halved here. Order matters: more specific
// patterns first.
const std::vector<Row>& table() {
  static const std::vector<Row> kRows = {
      // NVIDIA H200 Tensor Core GPU datasheet (2024), H200 NVL column:
      // FP32 60, TF32 835*, BF16 1,671* (* with sparsity); GPU memory bandwidth 4.8 TB/s.
      {R"(H200.*NVL)", "H200 NVL", 60.0, 417.5, 835.5, 4800.0, "NVIDIA H200 datasheet (NVL), sparse/2"},
      // Same datasheet, H200 SXM column: FP32 67, TF32 989*, BF16 1,979*; 4.8 TB/s.
      {R"(H200)", "H200 SXM", 67.0, 494.5, 989.5, 4800.0, "NVIDIA H200 datasheet (SXM), sparse/2"},
      // NVIDIA H100 Tensor Core GPU datasheet (2023), H100 NVL column:
      // FP32 60, TF32 835*, BF16 1,671*; GPU memory bandwidth 3.9 TB/s.
      {R"(H100.*NVL)", "H100 NVL", 60.0, 417.5, 835.5, 3900.0, "NVIDIA H100 datasheet (NVL), sparse/2"},
      // NVIDIA H100 Tensor Core architecture whitepaper, table 3, H100 PCIe:
      // FP32 51.2, TF32 378/756, BF16 756/1513 (dense/sparse); memory bandwidth 2 TB/s
      // (the H100 datasheet's PCIe column: 2 TB/s).
      {R"(H100.*PCIe)", "H100 PCIe", 51.2, 378.0, 756.0, 2000.0, "NVIDIA H100 whitepaper table 3 (PCIe)"},
      // Same table, H100 SXM5: FP32 66.9, TF32 494.7/989.4, BF16 989.4/1978.9;
      // memory bandwidth 3.35 TB/s (the H100 datasheet's SXM column: 3.35 TB/s).
      {R"(H100)", "H100 SXM", 66.9, 494.7, 989.4, 3350.0, "NVIDIA H100 whitepaper table 3 (SXM5)"},
      // NVIDIA A100 Tensor Core GPU datasheet (2021): FP32 19.5, TF32 156
      // (312*), BF16 312 (624*) in every column; GPU memory bandwidth by
      // column: 80GB PCIe 1,935 GB/s, 80GB SXM 2,039 GB/s, 40GB PCIe and 40GB
      // SXM 1,555 GB/s. CUDA names both memory sizes ("NVIDIA A100 80GB PCIe",
      // "NVIDIA A100-PCIE-40GB", "NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB").
      {R"(A100.*(80GB.*PCIE|PCIE.*80GB))", "A100 80GB PCIe", 19.5, 156.0, 312.0, 1935.0,
       "NVIDIA A100 datasheet (80GB PCIe)"},
      {R"(A100.*PCIE)", "A100 40GB PCIe", 19.5, 156.0, 312.0, 1555.0, "NVIDIA A100 datasheet (40GB PCIe)"},
      {R"(A100.*80GB)", "A100 80GB SXM", 19.5, 156.0, 312.0, 2039.0, "NVIDIA A100 datasheet (80GB SXM)"},
      {R"(A100)", "A100 40GB SXM", 19.5, 156.0, 312.0, 1555.0, "NVIDIA A100 datasheet (40GB SXM)"},
      // NVIDIA L4 datasheet (2023): FP32 30.3, TF32 120*, BF16 242*; GPU memory bandwidth 300 GB/s.
      {R"(\bL4\b)", "L4", 30.3, 60.0, 121.0, 300.0, "NVIDIA L4 datasheet, sparse/2"},
      // The A10G is AWS's variant of the A10; NVIDIA publishes no A10G sheet.
      // NVIDIA A10 datasheet: FP32 31.2, TF32 62.5 (125*), BF16 125 (250*);
      // GPU memory bandwidth 600 GB/s (AWS gives the A10G of its G5 instances 600 GB/s too).
      {R"(A10G)", "A10G", 31.2, 62.5, 125.0, 600.0, "NVIDIA A10 datasheet (A10G has none of its own)"},
      // NVIDIA Ada Lovelace architecture whitepaper v1.01, appendix table, RTX
      // 4090: FP32 82.6, TF32 82.6/165.2, BF16 (FP32 accumulate) 165.2/330.4;
      // memory bandwidth 1008 GB/s (21 Gbps GDDR6X on a 384-bit bus).
      {R"(RTX 4090)", "RTX 4090", 82.6, 82.6, 165.2, 1008.0, "NVIDIA Ada whitepaper v1.01 appendix"},
  };
  return kRows;
}

// The first row whose pattern the device name matches, or null.
const Row* find_row(const std::string& device_name) {
  for (const auto& row : table())
    if (std::regex_search(device_name, std::regex(row.pattern, std::regex::icase))) return &row;
  return nullptr;
}
}  // namespace

std::optional<PeakEntry> datasheet_peak(const std::string& device_name, Precision p) {
  const Row* row = find_row(device_name);
  if (!row) return std::nullopt;
  const double tflops = p == Precision::kFP32 ? row->fp32 : p == Precision::kTF32 ? row->tf32 : row->bf16;
  return PeakEntry{row->label, tflops, row->source};
}

std::optional<BandwidthEntry> datasheet_bandwidth(const std::string& device_name) {
  const Row* row = find_row(device_name);
  if (!row) return std::nullopt;
  return BandwidthEntry{row->label, row->memory_gbps, row->source};
}

}  // namespace ladder
