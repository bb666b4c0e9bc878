// bench/runner_options.h: how a run is made (bench/runner.h): its directory,
// identity, repeats and output, shared by the runner, the run directory's
// layout (bench/run_dir.h) and the parity check (bench/parity.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ladder {

struct RunnerOptions {
  std::string run_dir;
  std::string run_id;
  std::string exe;                  // this executable, re-run as `ladder measure`
  std::vector<std::string> argv;
  std::string mode = "ladder";
  int64_t parity_steps = 5;
  double rung_timeout_s = 3600;
  int repeats = 1;                  // processes per measured cell (--repeat)
  bool resume = false;
  bool quiet = false;
  std::string format = "text";      // the table's --format (reports/reporter.h)
  std::vector<std::string> peers;   // --peers (bench/peers.h), recorded in matrix.json and summary.json
  std::string peers_source;         // "--peers", or why the default is what it is
};

}  // namespace ladder
