// tests/tiny_step.h: a TrainStep of one rung on the tiny preset, on the CPU,
// with synthetic data: what the rung, switch and step tests run.
#pragma once

#include <memory>

#include "bench/run/matrix.h"
#include "variants/rungs.h"
#include "variants/step.h"

namespace ladder {

inline std::unique_ptr<TrainStep> tiny_cpu_step(const char* rung_name) {
  RunConfig cfg = config_for("tiny", Overrides{}, "cpu");
  const Rung rung = parse_rung(rung_name);
  cfg.rung = rung.name;
  cfg.sw = rung.sw;
  SyntheticSpec spec{cfg.batch, cfg.seq, cfg.model.vocab_size, cfg.seed};
  return std::make_unique<TrainStep>(cfg, torch::kCPU, make_synthetic_source(spec));
}

}  // namespace ladder
