// variants/config/precision.cpp: see precision.h.
#include "variants/config/precision.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ladder {

namespace {
// Max relative difference of a fixed matmul against its float64 result.
double matmul_error(const torch::Device& device) {
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  auto a = torch::randn({256, 256}, gen, torch::kFloat32);  // (256, 256)
  auto b = torch::randn({256, 256}, gen, torch::kFloat32);  // (256, 256)
  auto exact = torch::mm(a.to(torch::kFloat64), b.to(torch::kFloat64));
  auto got = torch::mm(a.to(device), b.to(device)).to(torch::kCPU, torch::kFloat64);
  return ((got - exact).abs().max() / exact.abs().max()).item<double>();
}

// fp32 products carry ~1e-7 relative error; TF32 ~1e-3, bf16 ~1e-2.
constexpr double kReducedPrecisionError = 1e-5;
}  // namespace

PrecisionEffect enable_tf32(const torch::Device& device) {
  auto& ctx = at::globalContext();
  PrecisionEffect e;
  const double ieee_error = matmul_error(device);
  if (device.is_cuda()) {
    ctx.setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL, at::Float32Precision::TF32);
    ctx.setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::CONV, at::Float32Precision::TF32);
    e.mechanism = "CUDA fp32 matmul and conv precision 'tf32' (TF32 in cuBLAS and cuDNN)";
    const double err = matmul_error(device);
    e.effective = err > kReducedPrecisionError;
    e.reason = e.effective
                   ? fmt::format("probe matmul error {:.1e} (fp32: {:.1e}): TF32 tensor cores in use", err, ieee_error)
                   : fmt::format("probe matmul error {:.1e} unchanged from fp32: this GPU has no TF32 "
                                 "(needs compute capability >= 8.0)", err);
    return e;
  }
  using at::Float32Backend;
  using at::Float32Op;
  using at::Float32Precision;
  const std::pair<Float32Precision, const char*> modes[] = {{Float32Precision::TF32, "tf32"},
                                                           {Float32Precision::BF16, "bf16"}};
  std::string tried;
  for (const auto& [mode, name] : modes) {
    try {
      ctx.setFloat32Precision(Float32Backend::MKLDNN, Float32Op::MATMUL, mode);
    } catch (const c10::Error& err) {
      tried += fmt::format("{}'{}' rejected ({})", tried.empty() ? "" : "; ", name, err.what_without_backtrace());
      continue;
    }
    const double err = matmul_error(device);
    if (err > kReducedPrecisionError) {
      e.effective = true;
      e.mechanism = fmt::format("oneDNN fp32 matmul precision '{}'", name);
      e.reason = fmt::format("probe matmul error {:.1e} (fp32: {:.1e}): oneDNN runs fp32 matmuls in {}",
                             err, ieee_error, name);
      return e;
    }
    tried += fmt::format("{}'{}' accepted but the probe matmul is unchanged (error {:.1e}; the CPU "
                         "lacks the instructions)",
                         tried.empty() ? "" : "; ", name, err);
  }
  ctx.setFloat32Precision(Float32Backend::MKLDNN, Float32Op::MATMUL, Float32Precision::NONE);
  e.mechanism = "oneDNN fp32 matmul precision (tf32, then bf16)";
  e.reason = "no reduced-precision fp32 matmul mode took effect on this CPU: " + tried;
  return e;
}

void disable_tf32(const torch::Device&) {
  auto& ctx = at::globalContext();
  ctx.setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL, at::Float32Precision::IEEE);
  ctx.setFloat32Precision(at::Float32Backend::MKLDNN, at::Float32Op::MATMUL, at::Float32Precision::NONE);
}

bool cuda_matmul_tf32() {
  return at::globalContext().float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL) ==
         at::Float32Precision::TF32;
}

const std::vector<std::pair<at::Float32Backend, at::Float32Op>>& SavedPrecision::settings() {
  static const std::vector<std::pair<at::Float32Backend, at::Float32Op>> kSettings = {
      {at::Float32Backend::CUDA, at::Float32Op::MATMUL},
      {at::Float32Backend::CUDA, at::Float32Op::CONV},
      {at::Float32Backend::MKLDNN, at::Float32Op::MATMUL}};
  return kSettings;
}

SavedPrecision::SavedPrecision() {
  for (const auto& [backend, op] : settings()) saved_.push_back(at::globalContext().float32Precision(backend, op));
}

SavedPrecision::~SavedPrecision() {
  for (size_t k = 0; k < saved_.size(); ++k)
    at::globalContext().setFloat32Precision(settings()[k].first, settings()[k].second, saved_[k]);
}

AutocastScope::AutocastScope(bool enabled, const torch::Device& device)
    : enabled_(enabled), type_(device.type()) {
  if (!enabled_) return;
  prev_enabled_ = at::autocast::is_autocast_enabled(type_);
  prev_dtype_ = at::autocast::get_autocast_dtype(type_);
  at::autocast::set_autocast_dtype(type_, at::kBFloat16);
  at::autocast::set_autocast_enabled(type_, true);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!enabled_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(type_, prev_enabled_);
  at::autocast::set_autocast_dtype(type_, prev_dtype_);
}

PrecisionEffect probe_bf16_autocast(const torch::Device& device) {
  torch::NoGradGuard no_grad;
  auto x = torch::randn({8, 16}, torch::TensorOptions().device(device));
  auto w = torch::randn({4, 16}, torch::TensorOptions().device(device));
  torch::Tensor y;
  {
    AutocastScope scope(true, device);
    y = torch::nn::functional::linear(x, w);
  }
  PrecisionEffect e;
  e.mechanism = fmt::format("autocast({}, bfloat16) around forward and loss", c10::DeviceTypeName(device.type(), true));
  e.effective = y.scalar_type() == at::kBFloat16;
  e.reason = e.effective ? "a linear under autocast returns bfloat16"
                         : fmt::format("a linear under autocast returned {}", c10::toString(y.scalar_type()));
  return e;
}

PrecisionEffect enable_bf16(const torch::Device& device) {
  if (device.is_cuda()) {
    // cuBLAS may reduce split-K partial sums in bf16 (PyTorch's default,
    // allow_bf16_reduced_precision_reduction). Where it picks split-K depends
    // on the shapes and their alignment, so the unpadded vocabulary's backward
    // GEMM (dx = dlogits @ wte, K = 50257) took it and the padded one did
    // not: the gradient norm moved 2.2 % against 0.17 % (variants/README.md, "Loss
    // parity"). Reducing in fp32 keeps split-K and makes the maths of the
    // bf16 rung independent of padding.
    at::globalContext().setAllowBF16ReductionCuBLAS(/*allow_reduced_precision=*/false, /*allow_splitk=*/true);
  }
  PrecisionEffect e = probe_bf16_autocast(device);
  if (device.is_cuda()) e.mechanism += "; cuBLAS reduces split-K partial sums in fp32 (no bf16 reduction)";
  return e;
}

}  // namespace ladder
