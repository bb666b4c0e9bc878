// bench/run/runner.h: runs a matrix, one child process per cell.
//
// Isolation: each cell is `ladder measure` in a fresh process, so it gets a
// fresh allocator, a clean peak memory and crash isolation. A crash, an OOM or
// a timeout is recorded in that cell's report with the reason, and the matrix
// carries on. Ctrl-C stops cleanly: completed reports are kept and the summary
// marks what is missing. `--resume RUN_DIR` skips cells that already have a
// complete report (bench/run/run_dir.h: the directory's layout, load_run_dir).
// When every cell has run, loss parity is checked (bench/run/parity.h) and the
// per-run summary.json (bench/run/summary_rows.h) and the table are written.
//
// After the rungs, the PyTorch peers (--peers, bench/run/peers.h): each a
// scripts/peer.py child whose report this runner completes (MFU from the run's
// roofline, as for rungs). A peer that fails is recorded and the matrix
// carries on; peers take no part in loss parity.
//
// Before the rungs, one `ladder roofline` child measures the device's matmul
// ceilings and memory bandwidth into <run_dir>/roofline.json; every rung's
// MFU 'p' uses the first.
// With --repeat N, every measured cell runs in N processes, interleaved
// (all cells once, then all again), so drift hits every rung alike; repeat k
// of a cell writes <cell>/repeat<k>/report.json (repeat 1: <cell>/report.json)
// and the summary's figures are medians of the per-process medians.
// A write failure (a full disk) stops the run; summary.json still lists what
// completed and why it stopped.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "bench/run/matrix.h"
#include "bench/run/runner_options.h"

namespace ladder {

// Exit code: 0 all cells ok and parity held, 1 a cell failed or failed parity,
// 130 interrupted.
int run_matrix(const std::vector<Cell>& cells, const RunnerOptions& opts);

}  // namespace ladder
