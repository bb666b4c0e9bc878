// bench/measure/measure.h: measure one rung in this process and write its report.
//
// This is what each child process of the matrix runner does (`ladder
// measure`), and what a user runs to debug a single rung in-process: setup
// (threads, allocator, rendezvous, tracer, the step), the steps under the
// harness with this process's observers, then the one report builder
// (bench/measure/report/rung_report.h). On an exception (an OOM included) it writes a report
// with status "failed" or "oom" that names the step and phase where it
// happened, then rethrows.
//
// The ddp rung runs one measure_rung per rank (bench/measure/device/launch_env.h): every rank
// runs the same steps; rank 0 gathers the others' per-step figures through
// the rendezvous store and alone writes the report (and --save-final).
#pragma once

#include <string>
#include <vector>

#include "bench/measure/device/launch_env.h"
#include "bench/measure/roofline/roofline.h"
#include "variants/config/config.h"

namespace ladder {

struct MeasureOptions {
  std::string run_id;
  std::string report_path;  // <run_dir>/<cell>/report.json
  std::string save_init;    // optional: initial weights for scripts/reference.py
  std::string save_final;   // optional: weights after the last step (rank 0)
  std::string save_grads;   // optional: step 0's gradients before the clip (rank 0)
  std::string label;        // progress-line label (the cell id)
  std::vector<std::string> argv;
  bool quiet = false;
  bool count_ops = true;    // one extra profiled step for operator/kernel counts
  RooflineInUse roofline;     // the run's roofline.json (--roofline), read once before the steps; none: probe here
  LaunchEnv launch;         // the ddp rung: rank, world and rendezvous (cfg.rank etc. agree)
};

// Rank 0 writes the report to opts.report_path.
void measure_rung(RunConfig cfg, const MeasureOptions& opts);

// Environment variable of the test-only crash hook: when it names the rung
// being measured, the process aborts at its first step (SIGABRT).
inline constexpr const char* kCrashHookEnv = "LADDER_TEST_CRASH_RUNG";
// Test-only: kill:RANK:STEP or hang:RANK:STEP stops one ddp rank (measure.cpp).
inline constexpr const char* kFaultHookEnv = "LADDER_TEST_FAULT";

}  // namespace ladder
