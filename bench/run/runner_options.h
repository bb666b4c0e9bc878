// bench/run/runner_options.h: how a run is made (bench/run/runner.h): its directory,
// identity, repeats and output, shared by the runner, the run directory's
// layout (bench/run/run_dir.h) and the parity check (bench/run/parity.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ladder {

// `ladder run`'s default: two rounds, so that every ratio has an interval and
// compare can judge (a process is the independent sample), with fewer
// measured steps per process than one process would take.
inline constexpr int kDefaultRepeats = 2;
inline constexpr int64_t kDefaultStepsPerProcess = 5;

struct RunnerOptions {
  std::string run_dir;
  std::string run_id;
  std::string exe;                  // this executable, re-run as `ladder measure`
  std::vector<std::string> argv;
  std::string mode = "ladder";
  int64_t parity_steps = 5;
  double rung_timeout_s = 3600;
  int repeats = 2;                  // rounds of the measured cells (--repeat N; with auto, the first rounds)
  bool repeat_auto = false;         // --repeat auto: more rounds while intervals are wide and time is left
  double target_ci_pct = 2.0;       // --target-ci: a ratio is narrow enough within +-this % (half-width)
  double time_budget_s = 0;         // --time-budget: no new round after this long; 0: twice the first rounds'
  // A one-run A/B comparison (--ab): every job once per side, the sides
  // interleaved (A B in odd rounds, B A in even ones). Side A runs
  // side_a_exe (another build; default this one), side B runs this build
  // with side_b_env set.
  std::vector<std::string> sides;
  std::string ab_spec;              // --ab as given, for the summary
  std::string side_a_exe;
  std::vector<std::pair<std::string, std::string>> side_b_env;
  bool resume = false;
  bool quiet = false;
  std::string format = "text";      // the table's --format (reports/render/reporter.h)
  std::vector<std::string> peers;   // --peers (bench/run/peers.h), recorded in matrix.json and summary.json
  std::string peers_source;         // "--peers", or why the default is what it is
};

}  // namespace ladder
