// reports/stats/machine_speed.h: whether the machine's speed, as the speed probe
// read it (bench/measure/observers/speed_probe.h), explains why a cell's processes differ.
//
// Every process times a fixed workload beside its steps (timing.noise.probe,
// speed_index_per_s). When a cell's per-process step times spread more than a
// quiet machine's and the probe's spread across the same processes accounts
// for it, the cause has a name: the machine ran at different speeds, not the
// code. The rule, on the log scale (a slower machine slows by a factor):
//   - dt is noisy: its CV across processes is above the quiet limit;
//   - the probe's range (slowest over fastest) is at least half dt's;
//   - they move together: with 3+ processes the correlation of log dt and
//     the log of the probe's time is at least 0.5; with 2, the process with
//     the slower steps had the slower probe.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ladder {

// Was the machine quiet while a cell ran? On a quiet machine dt varies by a
// few percent between the steps of a process and between processes (2-3 % CV
// for fp32 gpt2-124m B4 T64 on this repository's 2-core VM); past the limit,
// a difference of that size between two runs is the machine's, not the code's.
// The run table's noise verdict (bench/run/summary_rows.cpp) and the rule below.
inline constexpr double kQuietCvLimit = 0.05;

struct ProbeSpread {
  int processes = 0;
  double dt_half_range_pct = 0;     // +-: half the slowest process's dt over the fastest's
  double probe_half_range_pct = 0;  // +-: the same for the probe's time
  double correlation = 0;           // of log dt and log probe time (2 processes: +-1)
  bool dt_noisy = false;
  bool explains = false;
  // "the machine's speed varied: probe +-6.1 % across processes (dt +-7.0 %)"
  // when it explains; empty otherwise.
  std::string cause;
};

// dt_ms and speed_index (per process, parallel, > 0; processes without a
// probe left out by the caller); cv_limit: the quiet machine's CV of dt
// across processes. Nothing (nullopt) with fewer than 2 processes.
std::optional<ProbeSpread> probe_spread(const std::vector<double>& dt_ms, const std::vector<double>& speed_index,
                                        double cv_limit);

}  // namespace ladder
