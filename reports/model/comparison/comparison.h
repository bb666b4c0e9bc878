// reports/model/comparison/comparison.h: the comparison of `ladder compare A B [C ...]`
// (reports/commands/compare.h), which compares runs across GPUs, machines,
// builds and days.
//
// The first input is the baseline. For each rung: every input's run-level
// figures (reports/model/report/run_figures.h), its ratio to the baseline with a 95 %
// interval, and a verdict: faster, slower, within noise, unresolved, cannot
// judge, missing. An input's samples are its per-process medians (`ladder
// run --repeat N`, 2 by default, or runs joined by commas): a process is the
// independent unit, its steps are not. The ratio's interval and p come from
// Welch's t on the logs (reports/stats/inference.h, Boost.Math). A difference is
// faster or slower only if p (Holm-adjusted over the rungs) < alpha, the
// median dt moved by at least the noise threshold (default 1 %, as
// Criterion.rs's noise_threshold) and the interval excludes no change;
// within noise when the interval lies inside the threshold; unresolved
// otherwise. With one process per rung on either side there is no verdict:
// "cannot judge", the difference shown. Then a geomean row; and the ladder's shape (each
// rung's speedup over its own fp32, side by side). Before comparing,
// configs are diffed: a different preset, batch, sequence length or rung
// definition is refused unless --force; a different device, driver,
// CUDA/LibTorch version or host is the subject of the comparison and is
// shown in the header; an input with no readable environment makes the
// subject unknown, never "the same". Repeats of one input must agree on both.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reports/model/comparison/comparison_model.h"
#include "reports/model/report/report_loader.h"

namespace ladder {

struct CompareOptions {
  double alpha = 0.05;
  double noise_threshold_pct = 1.0;  // smallest |change of median dt| called faster or slower
  bool force = false;
  // The inputs are the two sides of one A/B run (`ladder run --ab`): their
  // processes are paired by round, and the interval is the paired one.
  bool paired = false;
  // --kernels: every rung's kernel families across the inputs
  // (reports/model/comparison/kernel_comparison.h), and the smallest change of a
  // family's ms per step called slower or faster.
  bool kernels = false;
  double kernel_threshold_pct = 5.0;
};

// `ladder compare RUN` of one A/B run: its sides A and B as two inputs (the
// side's prefix taken off each cell), to compare paired. Throws ConfigError
// when the run is not an A/B run.
std::vector<LoadedRun> split_sides(const LoadedRun& run);

// The comparison model that every output format renders. Throws ConfigError
// when configs differ and !force.
Comparison compare(const std::vector<LoadedRun>& runs, const CompareOptions& opts);

// The same, as `--format json` writes it (comparison_json).
nlohmann::json compare_runs(const std::vector<LoadedRun>& runs, const CompareOptions& opts);


}  // namespace ladder
