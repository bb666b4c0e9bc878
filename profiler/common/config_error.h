// profiler/common/config_error.h: ConfigError, bad user input.
//
// Thrown wherever an option, a config field or an input file is wrong, with a
// message naming the option or file, the field, the value and what was
// expected; the CLI turns it into exit code 2. Every layer throws it, so it
// lives below them all.
#pragma once

#include <stdexcept>

namespace ladder {

// Bad user input: the CLI turns it into exit code 2.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace ladder
