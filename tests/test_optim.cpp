// tests/test_optim.cpp: the fused multi-tensor AdamW (at::_fused_adamw_)
// matches torch::optim::AdamW after 10 steps, with GPT-2's parameter groups,
// also with its LR in a device tensor (the CUDA-graph form); the flat
// gradient buffer keeps gradients as views, zeroes them and clips as
// clip_grad_norm does.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "variants/config.h"
#include "variants/data.h"
#include "variants/grad_buffer.h"
#include "variants/model.h"
#include "variants/optim.h"
#include "variants/step.h"

namespace ladder {
namespace {

TEST(FusedAdamW, MatchesTorchAdamWAfterTenSteps) {
  const Preset& p = find_preset("tiny");
  TrainConfig t;
  t.max_lr = 1e-3;
  GPT a(p.model), b(p.model);
  init_gpt2_weights(a, 5);
  init_gpt2_weights(b, 5);
  auto reference = make_optimizer(a, t, /*fused=*/false);
  auto fused = make_optimizer(b, t, /*fused=*/true);
  EXPECT_STREQ(fused->name(), "at::_fused_adamw_");
  auto data = make_synthetic_source({p.batch, p.seq, p.model.vocab_size, 5});
  for (int64_t step = 0; step < 10; ++step) {
    Batch batch = data->batch(step);
    const double lr = learning_rate(t, step, 10);
    // Both optimizers get bit-identical gradients, so any difference is the
    // optimizer's arithmetic. (Recomputing grads on each model would let
    // roundoff-only gradients, like the attention key bias's, diverge.)
    lm_loss(a->forward(batch.x), batch.y).backward();
    auto grads_a = a->named_parameters();
    for (auto& item : b->named_parameters()) item.value().mutable_grad() = grads_a[item.key()].grad().clone();
    reference->step(lr);
    fused->step(lr);
    reference->zero_grad(true);
    fused->zero_grad(true);
  }
  auto pa = a->named_parameters(), pb = b->named_parameters();
  double worst = 0;
  for (const auto& item : pa) {
    const auto& x = item.value();
    const auto& y = pb[item.key()];
    worst = std::max(worst, (x - y).abs().max().item<double>());
    EXPECT_TRUE(torch::allclose(x, y, /*rtol=*/1e-5, /*atol=*/1e-6)) << item.key();
  }
  // The weights moved: this compared updates, not two untouched models.
  GPT fresh(p.model);
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
  const Preset& p = find_preset("tiny");
  TrainConfig t;
  t.max_lr = 1e-3;
  GPT a(p.model), b(p.model);
  init_gpt2_weights(a, 6);
  init_gpt2_weights(b, 6);
  auto host = make_optimizer(a, t, /*fused=*/true);
  auto device = make_optimizer(b, t, /*fused=*/true);
  ASSERT_TRUE(device->supports_device_lr());
  EXPECT_FALSE(make_optimizer(a, t, /*fused=*/false)->supports_device_lr());
  auto data = make_synthetic_source({p.batch, p.seq, p.model.vocab_size, 6});
  for (int64_t step = 0; step < 4; ++step) {
    Batch batch = data->batch(step);
    const double lr = learning_rate(t, step, 4);  // changes every step: a baked-in LR would show
    lm_loss(a->forward(batch.x), batch.y).backward();
    auto grads_a = a->named_parameters();
    for (auto& item : b->named_parameters()) item.value().mutable_grad() = grads_a[item.key()].grad().clone();
    host->step(lr);
    device->set_device_lr(lr);
    device->step_device_lr();
    host->zero_grad(true);
    device->zero_grad(true);
  }
  auto pa = a->named_parameters(), pb = b->named_parameters();
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

}  // namespace
}  // namespace ladder
