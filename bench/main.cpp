// bench/main.cpp: the `ladder` executable and its subcommands.
//
// Exit codes: 0 success, 1 a run failed, 2 bad input (the message names the
// option or file, the value, and what was expected).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "reports/commands/bands.h"
#include "reports/commands/compare.h"
#include "reports/commands/export.h"
#include "reports/commands/nsys_import.h"
#include "bench/micro/command.h"
#include "bench/measure/measure_command.h"
#include "bench/measure/report/report_schema.h"
#include "bench/measure/roofline/roofline.h"
#include "bench/measure/roofline/speed_of_light.h"
#include "bench/run/peers.h"
#include "bench/run/run_command.h"
#include "build_info.h"
#include "variants/config/config.h"
#include "variants/switches/switch.h"

namespace {

constexpr const char* kUsage =
    "usage: ladder <command> [options]\n"
    "\n"
    "Benchmarks and profiles the GPT-2 speedup ladder in LibTorch C++.\n"
    "\n"
    "commands:\n"
    "  run        run the benchmark matrix (the whole ladder by default), write reports\n"
    "  measure    measure one rung in this process (what each rung of run executes)\n"
    "  compare    compare runs (GPUs, machines, days) with significance tests\n"
    "  export     export a finished run in a --format: its table, or google/benchmark JSON (gbench)\n"
    "  bands      where a run's top rung spends its step against each PyTorch peer, band by band\n"
    "  nsys-import  an Nsight Systems capture (nsys export --type sqlite) as band, phase and kernel tables\n"
    "  sol        each rung's bands against the machine's limits: floor, efficiency, headroom\n"
    "  bench      micro-benchmarks of each rung's mechanism (google/benchmark), JSON in the run dir\n"
    "  roofline   measure the device's matmul ceiling at fp32/tf32/bf16 (MFU 'p' denominator)\n"
    "  peers      the PyTorch peers ladder run can measure beside the rungs (--json: for scripts/peer.py)\n"
    "  switches   print every switch of the ladder (variants/switches/) as a markdown table\n"
    "  schema     print the rung report's JSON Schema (reports/rung_report.schema.json), generated;\n"
    "             --summary: the run summary's (reports/run_summary.schema.json)\n"
    "  version    print the suite version and build\n"
    "\n"
    "'ladder <command> --help' describes a command's options.\n";

int dispatch(const std::vector<std::string>& argv) {
  if (argv.size() < 2 || argv[1] == "--help" || argv[1] == "-h" || argv[1] == "help") {
    fmt::print("{}", kUsage);
    return argv.size() < 2 ? 2 : 0;
  }
  const std::string& command = argv[1];
  const std::vector<std::string> args(argv.begin() + 2, argv.end());
  if (command == "run") return ladder::run_command(args, argv);
  if (command == "measure") return ladder::measure_command(args, argv);
  if (command == "compare") return ladder::compare_command(args);
  if (command == "export") return ladder::export_command(args);
  if (command == "bands") return ladder::bands_command(args);
  if (command == "nsys-import") return ladder::nsys_import_command(args);
  if (command == "sol") return ladder::sol_command(args);
  if (command == "bench") return ladder::micro::bench_command(args, argv);
  if (command == "roofline") return ladder::roofline_command(args);
  if (command == "peers") return ladder::peers_command(args);
  if (command == "schema") return ladder::schema_command(args);
  if (command == "switches") {
    fmt::print("{}", ladder::switches_markdown());
    return 0;
  }
  if (command == "version") {
    fmt::print("ladder {} ({}), {} build, {}, LibTorch {}\n", ladder::build_info::kVersion,
               ladder::build_info::kGitCommit, ladder::build_info::kBuildType,
               ladder::build_info::kCompiler, ladder::build_info::kTorchVersion);
    fmt::print("compiled in: {}\n", ladder::build_info::features());
    return 0;
  }
  throw ladder::ConfigError(
      fmt::format("unknown command '{}'; expected one of: run, measure, compare, export, bands, nsys-import, sol, bench, roofline, peers, switches, version (see 'ladder --help')",
                  command));
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  try {
    return dispatch(args);
  } catch (const ladder::ConfigError& e) {
    fmt::print(stderr, "ladder: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ladder: run failed: {}\n", e.what());
    return 1;
  }
}
