// tests/test_model.cpp: GPT-2 shape, parameter counts, initial loss, and
// that the step actually learns (overfitting one fixed batch).
#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "variants/config.h"
#include "variants/data.h"
#include "variants/model.h"
#include "variants/optim.h"
#include "variants/step.h"

namespace ladder {
namespace {

TEST(Model, Gpt2SmallHasExactly124439808Parameters) {
  ModelConfig cfg = find_preset("gpt2-124m").model;
  GPT model(cfg);
  EXPECT_EQ(model->num_params(), 124'439'808);
  // N for MFU excludes the position embeddings (1024 x 768).
  EXPECT_EQ(model->num_params(true), 124'439'808 - 1024 * 768);
}

TEST(Model, Gpt2SmallPaddedVocabHas124475904Parameters) {
  ModelConfig cfg = find_preset("gpt2-124m").model;
  cfg.vocab_size = 50304;
  GPT model(cfg);
  EXPECT_EQ(model->num_params(), 124'475'904);
}

TEST(Model, LmHeadIsTiedToTokenEmbedding) {
  GPT model(find_preset("tiny").model);
  // No separate lm_head parameter exists; the logits use wte's storage.
  for (const auto& p : model->named_parameters()) EXPECT_EQ(p.key().find("lm_head"), std::string::npos);
  auto idx = torch::zeros({1, 3}, torch::kInt64);
  auto logits = model->forward(idx);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{1, 3, 1000}));
}

TEST(Model, InitialisationFollowsGpt2) {
  ModelConfig cfg = find_preset("gpt2-124m").model;
  cfg.n_layer = 4;  // keep it quick; the scaling uses n_layer
  GPT model(cfg);
  init_gpt2_weights(model, 1);
  auto params = model->named_parameters();
  EXPECT_NEAR(params["wte.weight"].std().item<double>(), 0.02, 2e-4);
  EXPECT_NEAR(params["h.0.mlp.c_fc.weight"].std().item<double>(), 0.02, 2e-4);
  const double residual = 0.02 / std::sqrt(2.0 * 4);
  EXPECT_NEAR(params["h.0.attn.c_proj.weight"].std().item<double>(), residual, 2e-4);
  EXPECT_NEAR(params["h.3.mlp.c_proj.weight"].std().item<double>(), residual, 2e-4);
  EXPECT_EQ(params["h.0.attn.c_attn.bias"].abs().max().item<double>(), 0.0);
  EXPECT_EQ(params["ln_f.weight"].min().item<double>(), 1.0);
  // Deterministic in the seed.
  GPT again(cfg);
  init_gpt2_weights(again, 1);
  EXPECT_TRUE(torch::equal(params["h.1.mlp.c_fc.weight"], again->named_parameters()["h.1.mlp.c_fc.weight"]));
}

TEST(Model, InitialLossIsNearLnVocabOnTinyPreset) {
  const Preset& p = find_preset("tiny");
  GPT model(p.model);
  init_gpt2_weights(model, 1337);
  auto data = make_synthetic_source({p.batch, p.seq, p.model.vocab_size, 1337});
  Batch b = data->batch(0);
  torch::NoGradGuard no_grad;
  const double loss = lm_loss(model->forward(b.x), b.y).item<double>();
  EXPECT_NEAR(loss, std::log(double(p.model.vocab_size)), 0.1);
}

TEST(Model, AttentionIsCausal) {
  GPT model(find_preset("tiny").model);
  init_gpt2_weights(model, 3);
  torch::NoGradGuard no_grad;
  auto a = torch::randint(0, 1000, {1, 16}, torch::kInt64);
  auto b = a.clone();
  b.index_put_({0, 15}, (a.index({0, 15}) + 1) % 1000);  // change only the last token
  auto la = model->forward(a), lb = model->forward(b);
  EXPECT_TRUE(torch::allclose(la.slice(1, 0, 15), lb.slice(1, 0, 15), 1e-5, 1e-6));
  EXPECT_FALSE(torch::allclose(la.slice(1, 15, 16), lb.slice(1, 15, 16)));
}

TEST(Step, OverfittingOneBatchHalvesTheLossWithin50Steps) {
  RunConfig cfg;
  const Preset& p = find_preset("tiny");
  cfg.model = p.model;
  cfg.batch = p.batch;
  cfg.seq = p.seq;
  cfg.steps = 50;
  cfg.warmup = 0;
  cfg.fixed_batch = true;
  cfg.train.max_lr = 3e-3;  // memorising one batch: a higher LR than pretraining
  SyntheticSpec spec{cfg.batch, cfg.seq, cfg.model.vocab_size, cfg.seed};
  spec.fixed_batch = true;
  TrainStep step(cfg, torch::kCPU, make_synthetic_source(spec));
  PhaseObserver none;
  const double first = step.run(0, none).loss.item<double>();
  double last = first;
  for (int64_t i = 1; i < 50; ++i) last = step.run(i, none).loss.item<double>();
  EXPECT_LT(last, first / 2) << "first " << first << " last " << last;
}

TEST(Step, ReportsPhasesInOrder) {
  struct Recorder : PhaseObserver {
    std::vector<std::string> events;
    void begin(Phase p) override { events.push_back(std::string("+") + phase_name(p)); }
    void end(Phase p) override { events.push_back(std::string("-") + phase_name(p)); }
  } rec;
  RunConfig cfg;
  cfg.model = find_preset("tiny").model;
  cfg.batch = 2;
  cfg.seq = 8;
  TrainStep step(cfg, torch::kCPU, make_synthetic_source({2, 8, cfg.model.vocab_size, 1}));
  step.run(0, rec);
  EXPECT_EQ(rec.events, (std::vector<std::string>{"+data", "-data", "+forward", "-forward",
                                                  "+backward", "-backward", "+optimizer",
                                                  "-optimizer"}));
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
