// bench/micro/command.h: `ladder bench` and the `ladder-micro` executable,
// the micro-benchmarks under google/benchmark (bench/micro/).
//
//   ladder bench [--preset NAME] [--device cpu|cuda|cuda:N|all] [--batch B]
//                [--threads N] [--seed S] [--out RUN_DIR] [--benchmark_*=...]
//
// Registers every family (families.h) for each device, records the
// environment of the reports in google/benchmark's JSON context, runs them,
// shows the results on the terminal and writes google/benchmark's JSON to
// <RUN_DIR>/micro.json atomically. --benchmark_* flags go to google/benchmark
// (--benchmark_filter, --benchmark_min_time, --benchmark_repetitions,
// --benchmark_format for the terminal, --benchmark_out, ...).
// Exit: 0 all ran and every check passed; 1 a check failed or a benchmark
// errored; 2 bad input.
#pragma once

#include <string>
#include <vector>

namespace ladder::micro {

int bench_command(const std::vector<std::string>& args, const std::vector<std::string>& argv);

}  // namespace ladder::micro
