// bench/micro/main.cpp: the `ladder-micro` executable, `ladder bench` on its
// own (see command.h): the same options, google/benchmark flags included.
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/micro/command.h"
#include "variants/config/config.h"

int main(int argc, char** argv) {
  const std::vector<std::string> argv_v(argv, argv + argc);
  try {
    return ladder::micro::bench_command({argv_v.begin() + 1, argv_v.end()}, argv_v);
  } catch (const ladder::ConfigError& e) {
    fmt::print(stderr, "ladder-micro: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ladder-micro: run failed: {}\n", e.what());
    return 1;
  }
}
