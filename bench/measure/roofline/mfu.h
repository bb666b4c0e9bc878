// bench/measure/roofline/mfu.h: FLOPs per token, MFU, and the datasheet table (peak
// TFLOP/s per precision and memory bandwidth).
//
// One formula, one place. FLOPs per token follow nanoGPT / PaLM (appendix B):
//   flops_per_token = 6 N + 12 L H Q T
// with N the parameter count without position embeddings, L layers, H heads,
// Q = C / H the head size, T the sequence length of the run. 6N covers the
// forward (2N) and backward (4N) matmuls; 12 L H Q T the attention scores.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "reports/model/report/roofline_section.h"  // BandwidthEntry
#include "variants/config/config.h"
#include "variants/config/precision_name.h"  // Precision, precision_name

namespace ladder {

inline constexpr const char* kFlopsFormula =
    "flops_per_token = 6*N + 12*L*H*Q*T (nanoGPT/PaLM; N = params without wpe, Q = C/H, "
    "T = seq)";

int64_t flops_per_token(const ModelConfig& model, int64_t n_params_without_wpe, int64_t seq);

// GPT-2's parameter count without wpe, from its shape: wte (Vp, C) tied to
// the lm_head, per block 12 C^2 + 13 C (ln_1, c_attn, c_proj, ln_2, c_fc,
// c_proj with their biases), and ln_f's 2 C. Vp is the model's vocabulary
// (padded with vocab-pad). For estimates before a model exists; reports
// count the built model's parameters.
int64_t gpt2_params_without_wpe(const ModelConfig& model, int64_t model_vocab);

// The pieces of that formula, for the micro-benchmarks (bench/micro/):
// one (M, K) @ (K, N) matmul is 2 M N K FLOPs (a multiply and an add per
// multiply-accumulate); forward + backward of a matmul is three of them, the
// "6" of 6 N. One layer's attention scores, forward + backward, cost
// 12 H Q T per token: QK^T and AV over the full T x T (no causal discount),
// 2 FLOPs each, times 3 for the backward.
int64_t matmul_flops(int64_t m, int64_t n, int64_t k);
int64_t attention_flops_per_token(int64_t n_head, int64_t head_size, int64_t seq);
// The same over the causal triangle only, the work causal attention needs:
// query t meets keys 0..t, (T + 1) / 2 keys a query on average, so
// 12 H Q (T + 1) / 2 = 6 H Q (T + 1) per token. A kernel that skips the
// masked blocks (SDPA's flash) computes about this much, an explicit one the
// full T x T; the attention micro-benchmarks count it for both, since a rate
// over the full T x T credits SDPA with twice the work it does (T 2048 on this
// repository's 2-core Xeon: 92 % of the fp32 matmul ceiling counted over
// T x T, 46 % over the triangle it computes).
int64_t causal_attention_flops_per_token(int64_t n_head, int64_t head_size, int64_t seq);

// Model FLOPs utilisation in percent of `peak_tflops`.
double mfu_pct(double tokens_per_s, int64_t flops_per_token, double peak_tflops);

struct PeakEntry {
  std::string device;  // the table's label, e.g. "H100 SXM"
  double tflops;       // dense (no sparsity) peak for the precision
  std::string source;  // the datasheet the number comes from
};

// The dense datasheet peak for a device name as CUDA reports it ("NVIDIA
// H100 80GB HBM3"), or nullopt for devices not in the table (and all CPUs).
std::optional<PeakEntry> datasheet_peak(const std::string& device_name, Precision p);

// The datasheet memory bandwidth for a device name as CUDA reports it, from
// the same table row as datasheet_peak; nullopt where the table has none.
std::optional<BandwidthEntry> datasheet_bandwidth(const std::string& device_name);

}  // namespace ladder
