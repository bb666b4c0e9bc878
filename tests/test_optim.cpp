// tests/test_optim.cpp: the fused multi-tensor AdamW (at::_fused_adamw_)
// matches torch::optim::AdamW after 10 steps, with GPT-2's parameter groups.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "variants/config.h"
#include "variants/data.h"
#include "variants/model.h"
#include "variants/optim.h"

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

}  // namespace
}  // namespace ladder
