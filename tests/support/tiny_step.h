// tests/support/tiny_step.h: a TrainStep of one rung on the tiny preset, on the CPU
// (or a GPU), with synthetic data: what the rung, switch and step tests run.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "bench/run/matrix.h"
#include "variants/config/rungs.h"
#include "variants/step/step.h"

namespace ladder {

// On `device` ("cpu", "cuda"); `adjust`, when given, changes the config last
// (--cpu-bf16 on, a total batch).
inline std::unique_ptr<TrainStep> tiny_step(const char* rung_name, const std::string& device,
                                            const std::function<void(RunConfig&)>& adjust = {}) {
  RunConfig cfg = config_for("tiny", Overrides{}, device);
  const Rung rung = parse_rung(rung_name);
  cfg.rung = rung.name;
  cfg.sw = rung.sw;
  if (adjust) adjust(cfg);
  SyntheticSpec spec{cfg.batch, cfg.seq, cfg.model.vocab_size, cfg.seed};
  return std::make_unique<TrainStep>(cfg, torch::Device(device), make_synthetic_source(spec));
}

// A switch's report entry as its JSON, for a failed expectation's message.
inline std::string dump(const SwitchEffect& e) { return fields::to_json(e).dump(); }

inline std::unique_ptr<TrainStep> tiny_cpu_step(const char* rung_name,
                                                const std::function<void(RunConfig&)>& adjust = {}) {
  return tiny_step(rung_name, "cpu", adjust);
}

}  // namespace ladder
