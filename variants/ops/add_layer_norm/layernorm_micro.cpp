// variants/ops/add_layer_norm/layernorm_micro.cpp: the fused rung's residual-add + LayerNorm, at
// the residual stream's shape (B, T, C), forward + backward, in the step's
// two precisions: fp32 (every tensor fp32) and bf16 (the bf16 step's: the
// residual, y and their gradients in bf16; x, s and the parameters fp32).
// Ways: composite, the add and at::layer_norm as ATen ops
// (fused::add_layer_norm_reference); on a CPU, fused (ladder's one-pass
// loops); on CUDA, row and vector (fused::add_layer_norm with
// --layer-norm-kernel row, and auto, which must take the vector kernels: a
// width they do not take is "not available here"). Every fused way's s, y
// and the gradients of x, r, weight and bias must agree with composite's
// within the precision's tolerance (composite is timed once the device's
// first fused way, fused or row, agreed with it).
//
// bytes_per_s counts the least traffic per element of x: read x and r and
// write s and y forward; read s, ds and dy and write dx and dr backward
// (weight and bias are C-sized and left out): 36 bytes in fp32, 28 in bf16.
#include <fmt/format.h>

#include "bench/micro/families.h"
#include "variants/ops/add_layer_norm/add_layer_norm.h"

namespace ladder::micro {
namespace {

enum class Way { kComposite, kFused, kRow, kVector };

const char* way_name(Way w) {
  switch (w) {
    case Way::kComposite: return "composite";
    case Way::kFused: return "fused";
    case Way::kRow: return "row";
    case Way::kVector: return "vector";
  }
  return "?";
}

struct LayernormInputs {
  torch::Tensor x, r, ds, dy;  // (B, T, C): x, ds float32; r, dy in the precision's dtype; x and r require grad
  torch::Tensor w, b;          // (C) float32, require grad
};

// Forward + backward; returns {s, y, dx, dr, dw, db}.
std::vector<torch::Tensor> run(Way way, const LayernormInputs& in) {
  const auto y_dtype = in.dy.scalar_type();
  if (way != Way::kComposite)
    fused::set_layer_norm_kernel(way == Way::kRow ? fused::LayerNormKernel::kRow : fused::LayerNormKernel::kAuto);
  auto [s, y] = way == Way::kComposite ? fused::add_layer_norm_reference(in.x, in.r, in.w, in.b, 1e-5, y_dtype)
                                       : fused::add_layer_norm(in.x, in.r, in.w, in.b, 1e-5, y_dtype);
  auto g = torch::autograd::grad({s, y}, {in.x, in.r, in.w, in.b}, {in.ds, in.dy});
  return {s, y, g[0], g[1], g[2], g[3]};
}

// The way's outputs against composite's; for vector, unavailable unless the
// vector kernels ran both ways.
CheckResult check_way(Way way, Precision precision, const LayernormInputs& in) {
  const auto before = fused::layer_norm_launches();
  auto got = run(way, in);
  const auto n = fused::layer_norm_launches() - before;
  if (way == Way::kVector && (n.forward_vector == 0 || n.backward_vector == 0))
    return unavailable_check(fmt::format("the vector kernels do not take C = {} (a multiple of 4 up to 2048)",
                                         in.x.size(-1)));
  auto want = run(Way::kComposite, in);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> pairs;
  for (size_t i = 0; i < want.size(); ++i) pairs.emplace_back(got[i], want[i]);
  return compare_all(pairs, tolerance_for(precision),
                     fmt::format("fused::add_layer_norm ({}) vs add + at::layer_norm: s, y, dx, dr, dw, db",
                                 way_name(way)));
}

// `checked`: the way whose check against composite gates this benchmark (its
// own; composite's is the device's first fused way's).
void bench_layernorm(benchmark::State& state, const std::string& check_key, const torch::Device& device, Way way,
                     Way checked, Precision precision, std::vector<int64_t> shape, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t C = shape.back();
  const auto low = dtype_for(precision);  // r, y and their gradients
  auto draw = [&](std::vector<int64_t> sizes, torch::ScalarType dtype = torch::kFloat) {
    return torch::randn(sizes, gen).to(device, dtype);
  };
  LayernormInputs in{draw(shape).requires_grad_(), draw(shape, low).requires_grad_(), draw(shape), draw(shape, low),
            (1.0 + 0.1 * draw({C})).requires_grad_(), (0.1 * draw({C})).requires_grad_()};
  const auto kernel_before = fused::layer_norm_kernel();  // run() sets it; put back at the end
  const CheckResult& check = check_once(check_key, [&] { return check_way(checked, precision, in); });
  if (passed_check(state, check)) {
    time_iterations(state, device, [&] { run(way, in); });
    const double low_bytes = double(torch::elementSize(low));
    set_byte_counters(state, (20.0 + 4.0 * low_bytes) * double(in.x.numel()));
  }
  fused::set_layer_norm_kernel(kernel_before);
}

void register_layernorm(const MicroConfig& cfg) {
  for (const auto& device : cfg.devices) {
    const int64_t B = cfg.batch_for(device), T = cfg.seq, C = cfg.model.n_embd;
    const std::vector<Way> ways = device.is_cuda() ? std::vector<Way>{Way::kComposite, Way::kRow, Way::kVector}
                                                   : std::vector<Way>{Way::kComposite, Way::kFused};
    for (Precision precision : {Precision::kFP32, Precision::kBF16}) {
      const std::string rest =
          fmt::format("{}/{}/B:{}/T:{}/C:{}", precision_name(precision), device_tag(device), B, T, C);
      for (Way way : ways) {
        const Way checked = way == Way::kComposite ? ways[1] : way;
        const std::string name = fmt::format("layernorm/{}/{}", way_name(way), rest);
        add_benchmark(name, [=](benchmark::State& st) {
          bench_layernorm(st, fmt::format("layernorm/check/{}/{}", way_name(checked), rest), device, way, checked,
                          precision, {B, T, C}, cfg.seed);
        });
      }
    }
  }
}

}  // namespace

extern const Family layernorm_family{"layernorm",
                                     "fused-ln: residual add + LayerNorm, composite vs one pass (on CUDA its row and "
                                     "vector kernels), fp32 and the bf16 step's dtypes",
                                     register_layernorm, nullptr, &switches::fused_ln};

}  // namespace ladder::micro
