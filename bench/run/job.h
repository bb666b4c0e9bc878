// bench/run/job.h: one job of a run (bench/run/run_dir.h: a cell's process in one
// round, on one side of an A/B run), run in its own child process.
//
// Isolation: each job is `ladder measure` (or a peer's scripts/peer.py) in a
// fresh process, so it gets a fresh allocator, a clean peak memory and crash
// isolation. A crash, an OOM or a timeout is recorded in that job's report
// with the reason, and the run carries on. Ctrl-C leaves no report: the job
// is missing (--resume runs it again).
#pragma once

#include <string>
#include <vector>

#include "bench/run/child_process.h"
#include "bench/run/run_dir.h"
#include "bench/run/runner_options.h"

namespace ladder {

// "fp32 #2", "B/flash #1", "grad-accum.parity-single": the job in progress lines.
std::string job_label(const Job& job);

// The test-only slowdown aimed at a cell (LADDER_TEST_SLOWDOWN_PCT=P@CELL[@ROUND],
// bench/measure/harness/harness.h): ConfigError unless CELL is one of `cells` (on
// side A or B where the run has `sides`); test_slowdown_env: P for that
// cell's process in that round, unset for every other, nothing to add for
// an untargeted slowdown (every process inherits it).
void check_test_slowdown(const std::vector<Cell>& cells, bool sides);
EnvVars test_slowdown_env(const Job& job);

// Runs a rung's job: `ladder measure --config` of its cell, one process per
// rank for ddp, side A's build for side A of an A/B run, side B's variables
// for side B. Appends to `missing` when Ctrl-C stopped it.
void run_measure_job(const Job& job, const std::string& progress, const std::string& roofline_file,
                     const RunnerOptions& o, std::vector<std::string>& missing);

// Runs a peer's scripts/peer.py child and completes its partial report into
// the job's report.json (complete_peer_report). No Python or torch:
// "skipped"; a compile error or an exception: "failed" with the peer's
// message; the run carries on.
void run_peer_job(const Job& job, const std::string& progress, const std::string& roofline_file,
                  const RunnerOptions& o, std::vector<std::string>& missing);

}  // namespace ladder
