// bench/measure.h: measure one rung in this process and write its report.
//
// This is what each child process of the matrix runner does (`ladder
// measure`), and what a user runs to debug a single rung in-process. On an
// exception (an OOM included) it writes a report with status "failed" or
// "oom" that names the step and phase where it happened, then rethrows.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "variants/config.h"

namespace ladder {

struct MeasureOptions {
  std::string run_id;
  std::string report_path;  // <run_dir>/<cell>/report.json
  std::string save_init;    // optional: initial weights for scripts/reference.py
  std::string label;        // progress-line label (the cell id)
  std::vector<std::string> argv;
  bool quiet = false;
  bool count_ops = true;    // one extra profiled step for operator/kernel counts
};

// Returns the report that was written.
nlohmann::json measure_rung(RunConfig cfg, const MeasureOptions& opts);

// Environment variable of the test-only crash hook: when it names the rung
// being measured, the process aborts at its first step (SIGABRT).
inline constexpr const char* kCrashHookEnv = "LADDER_TEST_CRASH_RUNG";

}  // namespace ladder
