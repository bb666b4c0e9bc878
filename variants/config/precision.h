// variants/config/precision.h: the numeric switches of the ladder, and whether each
// one actually took effect on this device.
//
// tf32: on CUDA, float32 matmul precision "high" (TF32 in cuBLAS and cuDNN).
// On CPU, LibTorch's oneDNN fp32-math mode: TF32 where the CPU supports it,
// else oneDNN's bf16 fp32-math ("bf32"), else not effective. Effectiveness is
// measured, not assumed: a probe matmul must change its result.
// bf16: autocast to bfloat16 around forward and loss, on CUDA and on CPU.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/torch.h>

namespace ladder {

struct PrecisionEffect {
  bool effective = false;
  std::string mechanism;  // what was set, e.g. "oneDNN fp32 matmul precision 'bf16'"
  std::string reason;     // why it is or is not effective
};

// Sets the reduced-precision fp32 matmul mode for the process and probes it.
PrecisionEffect enable_tf32(const torch::Device& device);
// Restores full-precision fp32 matmuls (the fp32 baseline).
void disable_tf32(const torch::Device& device);

// Whether cuBLAS runs fp32 matmuls in TF32 (the tf32 switch on CUDA), read
// through the per-backend API like every setting here.
bool cuda_matmul_tf32();

// The process's fp32 matmul settings (CUDA's matmul precision, which cuBLAS
// follows, and its conv precision, cuDNN's; oneDNN's matmul precision) as they
// were when made, put back when it goes: a step holds one for its lifetime, so
// the tf32 switch it set ends with it (a later fp32 computation in the same
// process, a test's, runs in fp32 again). Read and written through the
// per-backend API alone (Context::float32Precision): the legacy getter
// (float32MatmulPrecision) throws once oneDNN's precision has been set to a
// mode that took effect, as enable_tf32 does on a CPU with AMX or
// avx512_bf16, and it is used nowhere in the tree.
class SavedPrecision {
 public:
  SavedPrecision();
  ~SavedPrecision();
  SavedPrecision(const SavedPrecision&) = delete;
  SavedPrecision& operator=(const SavedPrecision&) = delete;

 private:
  static const std::vector<std::pair<at::Float32Backend, at::Float32Op>>& settings();
  std::vector<at::Float32Precision> saved_;  // parallel to settings()
};

// bf16 autocast for the current thread while in scope (no-op when disabled).
class AutocastScope {
 public:
  AutocastScope(bool enabled, const torch::Device& device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_;
  c10::DeviceType type_;
  bool prev_enabled_ = false;
  at::ScalarType prev_dtype_ = at::kFloat;
};

// Probes that autocast really runs a linear in bf16 on this device.
PrecisionEffect probe_bf16_autocast(const torch::Device& device);
// The bf16 rung's settings for the process, then the probe: on CUDA, cuBLAS
// must reduce split-K partial sums in fp32 (see precision.cpp).
PrecisionEffect enable_bf16(const torch::Device& device);

}  // namespace ladder
