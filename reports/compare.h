// reports/compare.h: `ladder compare A B [C ...]`, which compares runs across
// GPUs, machines, builds and days.
//
// The first input is the baseline. For each rung: the median dt, tokens/s,
// MFU and peak memory of every input, the ratio to the baseline, and a
// verdict (faster, slower, within noise, too few samples, missing). An input
// whose rungs ran in several processes (`ladder run --repeat N`, or runs
// joined by commas) is summarised and tested by its per-process medians,
// with Welch's t-test (reports/welch.h); with one process per rung the test
// falls back to Mann-Whitney U over its steps, and a warning says that steps
// are not independent. A difference is faster or slower only if p < alpha
// and the median dt moved by at least the noise threshold (default 1 %, as
// Criterion.rs's noise_threshold); anything else is "within noise", with
// both numbers shown. Then a geomean row; and the ladder's shape (each
// rung's speedup over its own fp32, side by side). Before comparing,
// configs are diffed: a different preset, batch, sequence length or rung
// definition is refused unless --force; a different device, driver,
// CUDA/LibTorch version or host is the subject of the comparison and is
// shown in the header. Repeats of one input must agree on both.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reports/document.h"
#include "reports/report_loader.h"

namespace ladder {

struct CompareOptions {
  double alpha = 0.05;
  double noise_threshold_pct = 1.0;  // smallest |change of median dt| called faster or slower
  bool force = false;
};

// The comparison model that every output format renders. Throws ConfigError
// when configs differ and !force.
nlohmann::json compare_runs(const std::vector<LoadedRun>& runs, const CompareOptions& opts);

// The comparison as tables for the formats of reports/reporter.h: one row per
// rung and input, the ladder's shape, and the lines around them.
Document comparison_document(const nlohmann::json& cmp);

int compare_command(const std::vector<std::string>& args);

}  // namespace ladder
