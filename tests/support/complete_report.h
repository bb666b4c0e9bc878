// tests/support/complete_report.h: a rung report that `ladder compare` reads as
// complete (every figure it needs), for the comparison's tests.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "reports/model/report/rung_report.h"

namespace ladder {

// A complete fp32 report of one process whose steps took about dt_ms:
// `n_steps` steps spread evenly over dt_ms +- jitter_ms.
inline RungReport complete_report(double dt_ms, int n_steps = 4, double jitter_ms = 0) {
  std::vector<double> steps;
  for (int i = 0; i < n_steps; ++i)
    steps.push_back(dt_ms + (n_steps > 1 ? jitter_ms * (2.0 * i / (n_steps - 1) - 1.0) : 0.0));
  RungReport r;
  r.kind = "ladder.rung_report";  // as read from its file
  r.status = "ok";
  r.config.preset = "tiny";
  r.config.batch = 4;
  r.config.seq = 64;
  StepColumns columns;
  for (int i = 0; i < n_steps; ++i) columns.step.push_back(i);
  columns.columns["dt_ms"].values = steps;
  r.steps = columns;
  StepSummary summary;
  // The median of one process's steps, each statistic as summarize gives it.
  summary.metrics = {{"dt_ms", summarize(steps)}, {"tokens_per_s", summarize({1000.0 / dt_ms})}};
  summary.metrics["dt_ms"].median = dt_ms;
  r.summary = summary;
  Mfu mfu;
  mfu.measured_roofline.mfu_pct = 1.0;
  r.mfu = mfu;
  Memory memory;
  memory.measured.peak_bytes = 1;
  r.memory = memory;
  return r;
}

}  // namespace ladder
