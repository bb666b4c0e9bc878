// bench/run_command.h: `ladder run`, which measures the step on one device
// and writes <out>/<rung>/report.json.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "variants/config.h"

namespace ladder {

// Parses `ladder run` options on top of the defaults: the preset is applied
// first (default: cpu-default on CPU, gpt2-124m on CUDA), then every explicit
// override. Returns false when --help was printed.
struct RunRequest {
  RunConfig cfg;
  std::string out_dir;       // run directory; default runs/<run_id>
  std::string run_id;
  std::string save_init;     // optional: write initial weights for scripts/reference.py
  bool quiet = false;
};
bool parse_run_args(const std::vector<std::string>& args, RunRequest& req);

// Returns the process exit code. Throws ConfigError for bad input.
int run_command(const std::vector<std::string>& args, const std::vector<std::string>& argv);

}  // namespace ladder
