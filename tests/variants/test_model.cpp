// tests/variants/test_model.cpp: GPT-2 shape, parameter counts, initial loss, causality.
#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "variants/config/config.h"
#include "variants/data/data.h"
#include "variants/model/model.h"
#include "variants/optim/optim.h"
#include "variants/step/step.h"

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

}  // namespace
}  // namespace ladder
