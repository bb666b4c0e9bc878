// tests/variants/test_optim.cpp: the fused multi-tensor AdamW (at::_fused_adamw_)
// matches torch::optim::AdamW after 10 steps, with GPT-2's parameter groups,
// also with its LR in a device tensor (the CUDA-graph form); the flat
// gradient buffer keeps gradients as views, zeroes them and clips as
// clip_grad_norm does; GPT-2's parameter groups, the LR schedule, and
// clip_grad_norm against LibTorch's.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "variants/config/config.h"
#include "variants/data/data.h"
#include "variants/ops/grad_buffer.h"
#include "variants/model/model.h"
#include "variants/optim/optim.h"
#include "variants/step/step.h"

namespace ladder {
namespace {

// Two tiny GPT-2s with the same weights (seed), each with an optimizer, run
// `steps` steps of build-nanogpt's schedule over `steps`. Both optimizers get
// bit-identical gradients (computed on a, copied to b), so any difference is
// the optimizers' arithmetic. (Recomputing grads on each model would let
// roundoff-only gradients, like the attention key bias's, diverge.)
struct Twins {
  GPT a{nullptr}, b{nullptr};
};
using OptimizerStep = std::function<void(StepOptimizer&, double lr)>;
Twins run_twins(uint64_t seed, int64_t steps, const TrainConfig& t, bool fused_a, bool fused_b,
                const OptimizerStep& step_a, const OptimizerStep& step_b) {
  const Preset& p = find_preset("tiny");
  Twins m{GPT(p.model), GPT(p.model)};
  init_gpt2_weights(m.a, seed);
  init_gpt2_weights(m.b, seed);
  auto opt_a = make_optimizer(m.a, t, fused_a);
  auto opt_b = make_optimizer(m.b, t, fused_b);
  auto data = make_synthetic_source({p.batch, p.seq, p.model.vocab_size, seed});
  for (int64_t step = 0; step < steps; ++step) {
    Batch batch = data->batch(step);
    const double lr = learning_rate(t, step, steps);
    lm_loss(m.a->forward(batch.x), batch.y).backward();
    auto grads_a = m.a->named_parameters();
    for (auto& item : m.b->named_parameters()) item.value().mutable_grad() = grads_a[item.key()].grad().clone();
    step_a(*opt_a, lr);
    step_b(*opt_b, lr);
    opt_a->zero_grad(true);
    opt_b->zero_grad(true);
  }
  return m;
}

void host_lr_step(StepOptimizer& opt, double lr) { opt.step(lr); }

TEST(FusedAdamW, MatchesTorchAdamWAfterTenSteps) {
  TrainConfig t;
  t.max_lr = 1e-3;
  GPT model(find_preset("tiny").model);
  EXPECT_STREQ(make_optimizer(model, t, /*fused=*/true)->name(), "at::_fused_adamw_");
  Twins m = run_twins(5, 10, t, /*fused_a=*/false, /*fused_b=*/true, host_lr_step, host_lr_step);
  auto pa = m.a->named_parameters(), pb = m.b->named_parameters();
  double worst = 0;
  for (const auto& item : pa) {
    const auto& x = item.value();
    const auto& y = pb[item.key()];
    worst = std::max(worst, (x - y).abs().max().item<double>());
    EXPECT_TRUE(torch::allclose(x, y, /*rtol=*/1e-5, /*atol=*/1e-6)) << item.key();
  }
  // The weights moved: this compared updates, not two untouched models.
  GPT fresh(find_preset("tiny").model);
  init_gpt2_weights(fresh, 5);
  EXPECT_GT((pa["h.0.mlp.c_fc.weight"] - fresh->named_parameters()["h.0.mlp.c_fc.weight"]).abs().max().item<double>(), 1e-3);
  RecordProperty("max_abs_diff", std::to_string(worst));
}

TEST(FusedAdamW, ZeroGradKeepsBuffersWhenAsked) {
  GPT m(find_preset("tiny").model);
  auto opt = make_optimizer(m, TrainConfig{}, true);
  auto data = make_synthetic_source({2, 8, 1000, 1});
  Batch b = data->batch(0);
  lm_loss(m->forward(b.x), b.y).backward();
  auto w = m->named_parameters()["wte.weight"];
  const void* before = w.grad().data_ptr();
  opt->zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().data_ptr(), before);
  EXPECT_EQ(w.grad().abs().sum().item<double>(), 0.0);
  opt->zero_grad(/*set_to_none=*/true);
  EXPECT_FALSE(w.grad().defined());
}

TEST(FusedAdamW, DeviceLrStepMatchesHostLrStep) {
  TrainConfig t;
  t.max_lr = 1e-3;
  GPT model(find_preset("tiny").model);
  EXPECT_TRUE(make_optimizer(model, t, /*fused=*/true)->supports_device_lr());
  EXPECT_FALSE(make_optimizer(model, t, /*fused=*/false)->supports_device_lr());
  // The LR changes every step over 4 steps: a baked-in LR would show.
  Twins m = run_twins(6, 4, t, /*fused_a=*/true, /*fused_b=*/true, host_lr_step, [](StepOptimizer& opt, double lr) {
    opt.set_device_lr(lr);
    opt.step_device_lr();
  });
  auto pa = m.a->named_parameters(), pb = m.b->named_parameters();
  for (const auto& item : pa)  // the LR passes through fp32 on the device path
    EXPECT_TRUE(torch::allclose(item.value(), pb[item.key()], /*rtol=*/1e-6, /*atol=*/1e-7)) << item.key();
}

TEST(FlatGradients, GradientsStayViewsAndClipMatchesClipGradNorm) {
  const Preset& p = find_preset("tiny");
  GPT a(p.model), b(p.model);
  init_gpt2_weights(a, 7);
  init_gpt2_weights(b, 7);
  auto params_a = a->parameters(), params_b = b->parameters();
  FlatGradients flat(params_b);
  ASSERT_TRUE(flat.intact());
  EXPECT_EQ(flat.buffer().abs().sum().item<double>(), 0.0);
  auto data = make_synthetic_source({p.batch, p.seq, p.model.vocab_size, 7});
  for (int64_t step = 0; step < 2; ++step) {  // accumulate two backward passes, as micro-steps do
    Batch batch = data->batch(step);
    lm_loss(a->forward(batch.x), batch.y).backward();
    lm_loss(b->forward(batch.x), batch.y).backward();
  }
  EXPECT_TRUE(flat.intact()) << "backward replaced a gradient instead of accumulating into its view";
  for (size_t i = 0; i < params_a.size(); ++i)
    EXPECT_TRUE(torch::allclose(params_b[i].grad(), params_a[i].grad(), 1e-6, 1e-7)) << "parameter " << i;
  const double max_norm = 0.5;  // below the norm, so the scale is applied
  const auto want = clip_grad_norm(params_a, max_norm).item<double>();
  const auto got = flat.clip(max_norm).item<double>();
  EXPECT_NEAR(got, want, 1e-5 * want);
  EXPECT_GT(got, max_norm);
  for (size_t i = 0; i < params_a.size(); ++i)
    EXPECT_TRUE(torch::allclose(params_b[i].grad(), params_a[i].grad(), 1e-5, 1e-7)) << "clipped parameter " << i;
  flat.zero();
  EXPECT_TRUE(flat.intact());
  EXPECT_EQ(flat.buffer().abs().sum().item<double>(), 0.0);
  for (const auto& q : params_b) EXPECT_EQ(q.grad().abs().sum().item<double>(), 0.0);
}

// FirstWrites: the owned segments keep their values through zero() (the
// next first write overwrites them), the others are zeroed; a claim is
// granted once per segment between zeroings, never for a segment not owned
// or a tensor outside the buffer, and a buffer starts zeroed (its first
// step's writes may add).
TEST(FlatGradients, FirstWritesLeaveTheOwnedSegmentsToTheirWriters) {
  auto a = torch::zeros({3, 4}, torch::requires_grad()), b = torch::zeros({5}, torch::requires_grad());
  FlatGradients flat({a, b});
  flat.write_first({a});
  const auto fw = FirstWrites::of(a.grad());
  ASSERT_TRUE(fw);
  EXPECT_EQ(FirstWrites::of(b.grad()), fw);
  EXPECT_FALSE(FirstWrites::of(torch::zeros({4})));
  EXPECT_FALSE(fw->claim(a.grad())) << "the buffer starts zeroed";
  a.grad().fill_(7);
  b.grad().fill_(3);
  flat.zero();
  EXPECT_EQ(b.grad().abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(torch::all(a.grad() == 7).item<bool>()) << "an owned segment is left to its first write";
  EXPECT_THROW(flat.check_first_writes(), c10::Error);
  EXPECT_FALSE(fw->claim(b.grad())) << "not owned: zeroed, so its writers add";
  EXPECT_TRUE(fw->claim(a.grad()));
  EXPECT_FALSE(fw->claim(a.grad())) << "the second write adds";
  EXPECT_NO_THROW(flat.check_first_writes());
  EXPECT_TRUE(flat.intact());
}

// The clip as the fused AdamW's grad_scale (what the step does with the flat
// buffer): the same update, and the same clipped gradients left behind, as
// clipping the buffer and then stepping.
TEST(FusedAdamW, ClipInsideTheKernelMatchesClipThenStep) {
  const Preset& p = find_preset("tiny");
  TrainConfig t;
  t.max_lr = 1e-3;
  GPT a(p.model), b(p.model);
  init_gpt2_weights(a, 8);
  init_gpt2_weights(b, 8);
  auto params_a = a->parameters(), params_b = b->parameters();
  FlatGradients flat_a(params_a), flat_b(params_b);
  auto opt_a = make_optimizer(a, t, /*fused=*/true), opt_b = make_optimizer(b, t, /*fused=*/true);
  ASSERT_TRUE(opt_b->divides_gradients_in_kernel());
  EXPECT_FALSE(make_optimizer(a, t, /*fused=*/false)->divides_gradients_in_kernel());
  auto data = make_synthetic_source({p.batch, p.seq, p.model.vocab_size, 8});
  const double max_norm = 0.05;  // below the gradients' norm: every step clips
  for (int64_t step = 0; step < 3; ++step) {
    Batch batch = data->batch(step);
    lm_loss(a->forward(batch.x), batch.y).backward();
    flat_b.buffer().copy_(flat_a.buffer());  // bit-identical gradients
    const double lr = learning_rate(t, step, 3);
    const auto norm_a = flat_a.clip(max_norm);
    opt_a->step(lr);
    auto [norm_b, divisor] = flat_b.clip_divisor(max_norm);
    EXPECT_EQ(norm_b.item<double>(), norm_a.item<double>());
    EXPECT_GT(divisor.item<double>(), 1.0);
    if (step % 2 == 0) {
      opt_b->step(lr, divisor);
    } else {  // the graph's form: the LR from the device
      opt_b->set_device_lr(lr);
      opt_b->step_device_lr(divisor);
    }
    EXPECT_TRUE(torch::allclose(flat_b.buffer(), flat_a.buffer(), 1e-6, 1e-9)) << "clipped gradients, step " << step;
    for (size_t i = 0; i < params_a.size(); ++i)
      EXPECT_TRUE(torch::allclose(params_b[i], params_a[i], 1e-6, 1e-7)) << "parameter " << i << ", step " << step;
    flat_a.zero();
    flat_b.zero();
  }
  // Below max_norm the divisor is 1: no clip.
  lm_loss(a->forward(data->batch(3).x), data->batch(3).y).backward();
  EXPECT_EQ(flat_a.clip_divisor(1e9).second.item<double>(), 1.0);
}

// The warm-up before a whole-step capture runs the update's kernels on
// scratch tensors: the model's parameters and gradients stay as they were.
TEST(FusedAdamW, WarmUpTouchesNoParameter) {
  GPT m(find_preset("tiny").model);
  init_gpt2_weights(m, 4);
  auto opt = make_optimizer(m, TrainConfig{}, /*fused=*/true);
  for (auto& q : m->parameters()) q.mutable_grad() = torch::ones_like(q);
  std::vector<torch::Tensor> before;
  for (auto& q : m->parameters()) before.push_back(q.detach().clone());
  opt->set_device_lr(1e-2);
  opt->warm_up_device_lr_step();
  auto params = m->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(torch::equal(params[i], before[i])) << "parameter " << i;
    EXPECT_TRUE(torch::equal(params[i].grad(), torch::ones_like(params[i]))) << "gradient " << i;
  }
}

// The per-parameter AdamW takes the same divisor by dividing first. The
// twins update on one thread: with two, the twins' wte.weight differed by up
// to 3e-8 from row 500 on (where the two threads split the tensor) in about
// one run in 30 on a loaded 2-vCPU VM (.ci/run, 2026-11-29); on one thread,
// 0 in 60 runs under the same load.
TEST(TorchAdamW, GradDivisorDividesTheGradientsFirst) {
  const Preset& p = find_preset("tiny");
  TrainConfig t;
  t.max_lr = 1e-3;
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  Twins m = run_twins(9, 2, t, /*fused_a=*/false, /*fused_b=*/false, host_lr_step, [](StepOptimizer& opt, double lr) {
    opt.step(lr, torch::full({}, 1.0));  // dividing by 1 changes nothing
  });
  at::set_num_threads(threads);
  for (const auto& item : m.a->named_parameters())
    EXPECT_TRUE(torch::equal(item.value(), m.b->named_parameters()[item.key()])) << item.key();
  GPT c(p.model);
  auto opt = make_optimizer(c, t, /*fused=*/false);
  for (auto& q : c->parameters()) q.mutable_grad() = torch::full_like(q, 3.0);
  opt->step(1e-3, torch::full({}, 2.0));
  for (auto& q : c->parameters()) EXPECT_TRUE(torch::equal(q.grad(), torch::full_like(q, 1.5)));
}

TEST(Schedule, WarmupThenCosineToTenPercent) {
  TrainConfig t;
  t.max_lr = 6e-4;
  t.lr_warmup_steps = 10;
  EXPECT_DOUBLE_EQ(learning_rate(t, 0, 100), 6e-4 * 1 / 10);
  EXPECT_DOUBLE_EQ(learning_rate(t, 9, 100), 6e-4);
  EXPECT_DOUBLE_EQ(learning_rate(t, 10, 100), 6e-4);
  EXPECT_NEAR(learning_rate(t, 55, 100), 6e-5 + 0.5 * (6e-4 - 6e-5), 1e-15);
  EXPECT_DOUBLE_EQ(learning_rate(t, 100, 100), 6e-5);
  EXPECT_DOUBLE_EQ(learning_rate(t, 500, 100), 6e-5);
}

TEST(Optimizer, WeightDecayOnlyOnTensorsOfTwoOrMoreDims) {
  GPT model(find_preset("tiny").model);
  TrainConfig t;
  auto opt = make_adamw(model, t);
  ASSERT_EQ(opt->param_groups().size(), 2u);
  for (const auto& p : opt->param_groups()[0].params()) EXPECT_GE(p.dim(), 2);
  for (const auto& p : opt->param_groups()[1].params()) EXPECT_LT(p.dim(), 2);
  auto& decay = static_cast<torch::optim::AdamWOptions&>(opt->param_groups()[0].options());
  auto& none = static_cast<torch::optim::AdamWOptions&>(opt->param_groups()[1].options());
  EXPECT_DOUBLE_EQ(decay.weight_decay(), 0.1);
  EXPECT_DOUBLE_EQ(none.weight_decay(), 0.0);
  EXPECT_DOUBLE_EQ(std::get<1>(decay.betas()), 0.95);
  EXPECT_DOUBLE_EQ(decay.eps(), 1e-8);
}

TEST(Step, ClipGradNormMatchesLibTorchAndScales) {
  auto a = torch::ones({3}, torch::requires_grad());
  auto b = torch::ones({4}, torch::requires_grad());
  (a * 3).sum().backward();  // grad 3 everywhere: norm sqrt(27)
  (b * 4).sum().backward();  // grad 4 everywhere: norm sqrt(64)
  const double expect = std::sqrt(27.0 + 64.0);
  auto norm = clip_grad_norm({a, b}, 1.0).item<double>();
  EXPECT_NEAR(norm, expect, 1e-5);
  const double after = std::sqrt(a.grad().pow(2).sum().item<double>() + b.grad().pow(2).sum().item<double>());
  EXPECT_NEAR(after, 1.0, 1e-4);
}

}  // namespace
}  // namespace ladder
