// bench/micro/command.cpp: see command.h.
#include "bench/micro/command.h"

#include <unistd.h>

#include <filesystem>
#include <thread>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/measure/device/device.h"
#include "bench/measure/device/environment.h"
#include "bench/micro/families.h"
#include "bench/micro/library_build.h"
#include "bench/micro/tee_reporter.h"
#include "build_info.h"
#include "profiler/common/atomic_file.h"
#include "profiler/common/cli.h"
#include "reports/model/report/report.h"

namespace ladder::micro {

namespace fs = std::filesystem;

namespace {

struct Options {
  std::string preset = "gpt2-124m";
  std::string device = "all";
  std::optional<int64_t> batch;
  std::optional<int64_t> seq;
  int64_t threads = 0;
  uint64_t seed = 1337;
  std::string out;
  std::vector<std::string> gbench_args;  // --benchmark_*, passed through
};

constexpr const char* kSummary =
    "Micro-benchmarks of each ladder rung's mechanism under google/benchmark, at a preset's shapes:\n"
    "matmul (fp32/tf32/bf16), attention (explicit vs SDPA), cross_entropy (V vs padded V), adamw\n"
    "(torch vs fused), mlp and layernorm (composite vs fused), allreduce (Gloo / NCCL, 2 ranks).\n"
    "Each benchmark checks its variants agree before it is timed. Writes RUN_DIR/micro.json\n"
    "(google/benchmark JSON). google/benchmark's own flags pass through, e.g.\n"
    "--benchmark_filter=REGEX --benchmark_min_time=SECONDS --benchmark_repetitions=N\n"
    "--benchmark_format=console|json|csv (terminal) --benchmark_list_tests=true.\n"
    "Exit: 0 ok, 1 a check failed or a benchmark errored, 2 bad input.";

Options parse(const std::vector<std::string>& args, bool* help) {
  Options o;
  std::vector<std::string> own;
  for (const auto& a : args) (a.rfind("--benchmark_", 0) == 0 ? o.gbench_args : own).push_back(a);
  std::string presets_list;
  for (const auto& p : presets()) presets_list += (presets_list.empty() ? "" : "|") + p.name;
  ArgParser ap("bench", kSummary);
  ap.add_value("--preset", presets_list, "shapes from this preset (default gpt2-124m)",
               [&](const std::string& v) { o.preset = v; });
  ap.add_value("--device", "cpu|cuda|cuda:N|all", "devices (default all: cpu, plus cuda:0 when available)",
               [&](const std::string& v) { o.device = v; });
  ap.add_value("--batch", "B", "sequences per benchmark (default: the preset's on CUDA, 1 on CPU)",
               [&](const std::string& v) { o.batch = parse_int("--batch", v); });
  ap.add_value("--seq", "T", "sequence length of the token-wise benchmarks, <= the preset's block size (default: the "
               "preset's)",
               [&](const std::string& v) { o.seq = parse_int("--seq", v); });
  ap.add_value("--threads", "N", "intra-op CPU threads (default: all cores)",
               [&](const std::string& v) { o.threads = parse_int("--threads", v); });
  ap.add_value("--seed", "S", "seed of the inputs (default 1337)", [&](const std::string& v) {
    const int64_t s = parse_int("--seed", v);
    if (s < 0) throw ConfigError(fmt::format("--seed: got {}, expected an integer >= 0", s));
    o.seed = uint64_t(s);
  });
  ap.add_value("--out", "RUN_DIR", "run directory for micro.json (default runs/<run_id>)",
               [&](const std::string& v) { o.out = v; });
  *help = !ap.parse(own);
  if (*help) return o;
  if (o.batch && *o.batch < 1) throw ConfigError(fmt::format("--batch: got {}, expected B >= 1", *o.batch));
  if (o.seq && *o.seq < 1) throw ConfigError(fmt::format("--seq: got {}, expected T >= 1", *o.seq));
  if (o.threads < 0) throw ConfigError(fmt::format("--threads: got {}, expected N >= 1", o.threads));
  return o;
}

std::vector<torch::Device> resolve_devices(const std::string& spec) {
  if (spec == "all") {
    std::vector<torch::Device> d = {torch::Device(torch::kCPU)};
    if (cuda_available()) d.push_back(parse_device("cuda"));
    return d;
  }
  return {parse_device(spec)};  // ConfigError for a bad spec or CUDA without a GPU
}

// The value of --benchmark_<name>=VALUE among the pass-through flags, or "".
std::string gbench_flag(const Options& o, const std::string& name) {
  const std::string prefix = "--benchmark_" + name + "=";
  std::string value;
  for (const auto& a : o.gbench_args)
    if (a.rfind(prefix, 0) == 0) value = a.substr(prefix.size());
  return value;
}

std::unique_ptr<benchmark::BenchmarkReporter> display_reporter(const Options& o) {
  const std::string format = gbench_flag(o, "format");
  if (format.empty() || format == "console") {
    int opts = isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Color : benchmark::ConsoleReporter::OO_None;
    const std::string tabular = gbench_flag(o, "counters_tabular");
    if (tabular == "true" || tabular == "1") opts |= benchmark::ConsoleReporter::OO_Tabular;
    return std::make_unique<benchmark::ConsoleReporter>(benchmark::ConsoleReporter::OutputOptions(opts));
  }
  if (format == "json") return std::make_unique<benchmark::JSONReporter>();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  if (format == "csv") return std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
  throw ConfigError(fmt::format("--benchmark_format: got '{}', expected console, json or csv", format));
}

// google/benchmark's context takes string values: nested JSON becomes dotted keys.
void add_context(const std::string& key, const nlohmann::json& value) {
  if (value.is_object()) {
    for (const auto& [k, v] : value.items()) add_context(key + "." + k, v);
  } else {
    benchmark::AddCustomContext(key, value.is_string() ? value.get<std::string>() : value.dump());
  }
}

}  // namespace

namespace {

// The context: what the reports record (bench/measure/device/environment.h), and the config.
void add_run_context(const MicroConfig& cfg, const std::string& run_id, const std::vector<std::string>& argv) {
  std::string devices, command;
  for (const auto& d : cfg.devices) devices += (devices.empty() ? "" : ",") + device_tag(d);
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
  add_context("ladder.environment", fields::to_json(describe_environment(cfg.devices.back())));
  add_context("ladder.run_id", run_id);
  add_context("ladder.command", command);
  add_context("ladder.version", fmt::format("{} ({})", build_info::kVersion, build_info::kGitCommit));
  add_context("ladder.preset", cfg.preset);
  add_context("ladder.model", nlohmann::json(cfg.model));
  add_context("ladder.seq", cfg.seq);
  add_context("ladder.devices", devices);
  std::string families;  // every family registered, in the order they run
  for (const Family* f : all_families()) families += (families.empty() ? "" : ",") + std::string(f->name);
  add_context("ladder.families", families);
  for (const auto& d : cfg.devices) add_context("ladder.batch." + device_tag(d), cfg.batch_for(d));
  add_context("ladder.peak_basis",
              "pct_of_peak: against the datasheet peak (bench/measure/roofline/mfu.cpp) for known GPUs, else the measured "
              "matmul roofline (bench/measure/roofline/roofline.h) at the benchmark's precision; the label names which");
  add_context("ladder.timing", "UseManualTime: CUDA events on GPU, steady clock on CPU (bench/measure/device/device.h)");
  // What library_build_type means for the library linked (library_build.h).
  add_context("ladder.gbench_library", library_build().context());
}

// google/benchmark parses its flags out of an argv of its own; one it does
// not take is refused (exit 2).
void initialize_gbench(const Options& o, const std::vector<std::string>& argv) {
  if (const std::string f = gbench_flag(o, "out_format"); !f.empty() && f != "json" && f != "console" && f != "csv")
    throw ConfigError(fmt::format("--benchmark_out_format: got '{}', expected json, console or csv", f));
  static std::vector<std::string> gargv;  // google/benchmark keeps pointers into it
  gargv = {argv.empty() ? "ladder" : argv[0]};
  gargv.insert(gargv.end(), o.gbench_args.begin(), o.gbench_args.end());
  std::vector<char*> cargv;
  for (auto& s : gargv) cargv.push_back(s.data());
  int argc = int(cargv.size());
  benchmark::Initialize(&argc, cargv.data());
  if (argc > 1)
    throw ConfigError(fmt::format("'{}' is not a google/benchmark flag this version (or value) accepts; see "
                                  "'ladder bench --help' and --benchmark_* in google/benchmark's --help",
                                  cargv[1]));
}

// After the benchmarks: micro.json written, and the exit code (1 when a
// correctness check failed or a benchmark did not finish; a way not
// available on the device is listed, not counted).
int report_results(const TeeReporter& tee, size_t ran, const std::string& run_dir) {
  const std::string path = (fs::path(run_dir) / "micro.json").string();
  write_file_atomically(path, tee.json());
  benchmark::Shutdown();
  fmt::print(stderr, "ladder bench: {} benchmark(s), google/benchmark JSON in {}\n", ran, path);
  const int failed = failed_checks();
  for (const auto& u : tee.unavailable()) fmt::print(stderr, "ladder bench: skipped, {}\n", u);
  for (const auto& e : tee.errors()) fmt::print(stderr, "ladder bench: error: {}\n", e);
  if (failed == 0 && tee.errors().empty()) return 0;
  fmt::print(stderr, "ladder bench: {} correctness check(s) failed, {} benchmark(s) did not finish\n", failed,
             tee.errors().size());
  return 1;
}

}  // namespace

int bench_command(const std::vector<std::string>& args, const std::vector<std::string>& argv) {
  bool help = false;
  Options o = parse(args, &help);
  if (help) return 0;
  const Preset& preset = find_preset(o.preset);  // ConfigError listing the presets
  MicroConfig cfg;
  cfg.preset = preset.name;
  cfg.model = preset.model;
  if (o.seq && *o.seq > preset.model.block_size)
    throw ConfigError(fmt::format("--seq: got {}, expected T <= {} ({}'s block size)", *o.seq,
                                  preset.model.block_size, preset.name));
  cfg.seq = o.seq.value_or(preset.seq);
  cfg.preset_batch = preset.batch;
  cfg.batch = o.batch;
  cfg.devices = resolve_devices(o.device);
  cfg.seed = o.seed;
  const int threads = o.threads > 0 ? int(o.threads) : int(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);  // LibTorch may default to one thread on a VM
  // Checked here: google/benchmark 1.7 prints its usage and exits 0 on a bad format.
  auto display = display_reporter(o);
  initialize_gbench(o, argv);
  const bool listing = !gbench_flag(o, "list_tests").empty() && gbench_flag(o, "list_tests") != "false";
  const std::string run_id = new_run_id();
  const std::string run_dir = o.out.empty() ? (fs::path("runs") / run_id).string() : o.out;
  if (!listing) ensure_writable_dir(run_dir, "--out");
  add_run_context(cfg, run_id, argv);
  for (const Family* f : all_families()) f->register_benchmarks(cfg);
  TeeReporter tee(std::move(display));
  const size_t ran = benchmark::RunSpecifiedBenchmarks(&tee);
  for (const Family* f : all_families())
    if (f->teardown) f->teardown();
  if (listing || ran == 0) {
    benchmark::Shutdown();
    if (listing) return 0;
    throw ConfigError(fmt::format("--benchmark_filter: '{}' matches no benchmark (list them with "
                                  "--benchmark_list_tests=true)",
                                  gbench_flag(o, "filter")));
  }
  return report_results(tee, ran, run_dir);
}

}  // namespace ladder::micro
