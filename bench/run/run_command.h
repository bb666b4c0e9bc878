// bench/run/run_command.h: the `ladder run` and `ladder measure` subcommands.
//
// run      the benchmark matrix (default: the whole ladder on the default
//          preset), one child process per cell, then parity, summary, table.
// measure  one rung in this process; what each child of `run` executes.
#pragma once

#include <string>
#include <vector>

namespace ladder {

// Both return the process exit code and throw ConfigError for bad input.
int run_command(const std::vector<std::string>& args, const std::vector<std::string>& argv);
int measure_command(const std::vector<std::string>& args, const std::vector<std::string>& argv);

}  // namespace ladder
