// bench/runner.h: runs a matrix, one child process per cell.
//
// Isolation: each cell is `ladder measure` in a fresh process, so it gets a
// fresh allocator, a clean peak memory and crash isolation. A crash, an OOM or
// a timeout is recorded in that cell's report with the reason, and the matrix
// carries on. Ctrl-C stops cleanly: completed reports are kept and the summary
// marks what is missing. `--resume RUN_DIR` skips cells that already have a
// complete report. When every cell has run, loss parity is checked and the
// per-run summary.json and the table are written.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "bench/matrix.h"

namespace ladder {

struct RunnerOptions {
  std::string run_dir;
  std::string run_id;
  std::string exe;                  // this executable, re-run as `ladder measure`
  std::vector<std::string> argv;
  std::string mode = "ladder";
  int64_t parity_steps = 5;
  double rung_timeout_s = 3600;
  bool resume = false;
  bool quiet = false;
};

// Exit code: 0 all cells ok and parity held, 1 a cell failed or failed parity,
// 130 interrupted.
int run_matrix(const std::vector<Cell>& cells, const RunnerOptions& opts);

// Validates that `run_dir` is a run directory whose matrix equals `cells`
// (when `cells` is non-empty); returns the saved cells and options.
// Throws ConfigError otherwise.
std::vector<Cell> load_run_dir(const std::string& run_dir, RunnerOptions& opts);

}  // namespace ladder
