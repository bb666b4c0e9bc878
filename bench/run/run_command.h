// bench/run/run_command.h: the `ladder run` subcommand: the benchmark matrix
// (default: the whole ladder on the default preset), one child process per
// cell (`ladder measure`, bench/measure/measure_command.h), then parity,
// summary, table.
#pragma once

#include <string>
#include <vector>

namespace ladder {

// The process exit code; throws ConfigError for bad input.
int run_command(const std::vector<std::string>& args, const std::vector<std::string>& argv);

}  // namespace ladder
