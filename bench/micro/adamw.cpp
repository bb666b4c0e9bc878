// bench/micro/adamw.cpp: the fused-adamw rung's mechanism. One AdamW step
// over the real GPT-2 parameter list of the preset (GPT-2's two groups,
// build-nanogpt's hyper-parameters), per-parameter torch::optim::AdamW
// against one at::_fused_adamw_ call per group: the two optimizers the step
// switches between (variants/optim/optim.h). From the same weights and gradients,
// two steps of each must move the weights the same way within the fp32
// tolerance.
//
// bytes_per_s counts the least traffic an AdamW step needs, 28 bytes per
// fp32 parameter: read the weight, gradient and two moments, write the weight
// and the two moments.
#include <fmt/format.h>

#include "bench/micro/families.h"
#include "variants/model/model.h"
#include "variants/optim/optim.h"

namespace ladder::micro {
namespace {

constexpr double kBytesPerParam = 7 * sizeof(float);

// The preset's model with GPT-2 init and a fixed, seeded gradient on every parameter.
GPT make_model(const ModelConfig& m, const torch::Device& device, uint64_t seed) {
  GPT model(m);
  init_gpt2_weights(model, seed);
  model->to(device);
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed + 1);
  for (auto& p : model->parameters())
    p.mutable_grad() = (torch::randn(p.sizes(), gen) * 1e-2).to(device);
  return model;
}

CheckResult check_adamw(const ModelConfig& m, const TrainConfig& train, const torch::Device& device,
                        uint64_t seed) {
  GPT a = make_model(m, device, seed), b = make_model(m, device, seed);
  auto torch_opt = make_optimizer(a, train, /*fused=*/false);
  auto fused_opt = make_optimizer(b, train, /*fused=*/true);
  std::vector<torch::Tensor> before;
  for (auto& p : a->parameters()) before.push_back(p.detach().clone());
  for (int step = 0; step < 2; ++step) {
    torch_opt->step(train.max_lr);
    fused_opt->step(train.max_lr);
  }
  std::vector<std::pair<torch::Tensor, torch::Tensor>> updates;  // (fused, torch) weight change
  auto pa = a->parameters(), pb = b->parameters();
  for (size_t i = 0; i < pa.size(); ++i) updates.emplace_back(pb[i] - before[i], pa[i] - before[i]);
  return compare_all(updates, tolerance_for(Precision::kFP32),
                     fmt::format("{} vs {}: weight updates after 2 steps", fused_opt->name(), torch_opt->name()));
}

void bench_adamw(benchmark::State& state, const std::string& check_key, const torch::Device& device, bool fused,
                 const ModelConfig& m, const TrainConfig& train, uint64_t seed) {
  const CheckResult& check = check_once(check_key, [&] { return check_adamw(m, train, device, seed); });
  GPT model = make_model(m, device, seed);
  auto opt = make_optimizer(model, train, fused);
  const auto params = model->parameters();
  if (!passed_check(state, check, fmt::format("{}: {} tensors in 2 groups", opt->name(), params.size()))) return;
  time_iterations(state, device, [&] { opt->step(train.max_lr); });
  set_byte_counters(state, kBytesPerParam * double(model->num_params()));
}

void register_adamw(const MicroConfig& cfg) {
  int64_t n_params = 0;
  for (const auto& p : gpt_parameter_shapes(cfg.model)) n_params += p.numel();
  for (const auto& device : cfg.devices) {
    const std::string rest = fmt::format("fp32/{}/params:{}", device_tag(device), n_params);
    for (bool fused : {false, true}) {
      const std::string name = fmt::format("adamw/{}/{}", fused ? "fused" : "torch", rest);
      add_benchmark(name, [=](benchmark::State& st) {
        bench_adamw(st, "adamw/check/" + rest, device, fused, cfg.model, cfg.train, cfg.seed);
      });
    }
  }
}

}  // namespace

extern const Family adamw_family{"adamw", "fused-adamw: per-parameter torch::optim::AdamW vs at::_fused_adamw_",
                                 register_adamw, nullptr, &switches::fused_adamw};

}  // namespace ladder::micro
