// bench/measure/measure_command.h: `ladder measure`, one rung in this
// process: what each child process of `ladder run` executes (a cell's
// config.json), or a rung from the command line's options.
#pragma once

#include <string>
#include <vector>

namespace ladder {

// The process exit code; throws ConfigError for bad input.
int measure_command(const std::vector<std::string>& args, const std::vector<std::string>& argv);

}  // namespace ladder
