// tests/variants/test_step.cpp: the training step learns (overfitting one fixed batch)
// and announces its phases in order.
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

}  // namespace
}  // namespace ladder
