// bench/measure/measure_command.cpp: see measure_command.h.
#include "bench/measure/measure_command.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/measure/config_options.h"
#include "bench/measure/device/device.h"
#include "bench/measure/harness/harness.h"
#include "bench/measure/device/launch_env.h"
#include "bench/measure/measure.h"
#include "bench/measure/roofline/roofline.h"
#include "profiler/common/atomic_file.h"
#include "profiler/common/cli.h"
#include "reports/model/report/report.h"
#include "reports/model/report/report_loader.h"
#include "variants/data/data_source.h"
#include "variants/config/rungs.h"
#include "variants/config_fields.h"

namespace ladder {

namespace fs = std::filesystem;

namespace {

void add_measure_options(ArgParser& ap, ConfigOptions& c, MeasureOptions& mo, std::string& config_file,
                         std::string& rung_name) {
  add_config_options(ap, c);
  ap.add_value("--rung", "NAME", "the rung to measure (default fp32)", [&](const std::string& v) { rung_name = v; });
  ap.add_value("--config", "FILE", "a resolved config (a cell's config.json); other options are ignored",
               [&](const std::string& v) { config_file = v; });
  ap.add_value("--report", "FILE", "report path (default <out>/<rung>/report.json)",
               [&](const std::string& v) { mo.report_path = v; });
  ap.add_value("--label", "TEXT", "progress-line label", [&](const std::string& v) { mo.label = v; });
  ap.add_value("--run-id", "ID", "run id recorded in the report", [&](const std::string& v) { mo.run_id = v; });
  ap.add_value("--save-init", "FILE", "write the initial weights (torch.load-able) for scripts/reference.py",
               [&](const std::string& v) { mo.save_init = v; });
  ap.add_value("--save-final", "FILE", "write the weights after the last step (rank 0)",
               [&](const std::string& v) { mo.save_final = v; });
  ap.add_value("--save-grads", "FILE",
               "write step 0's gradients before the clip (torch.load-able) for scripts/reference.py parity "
               "--grads (rank 0; not with CUDA graphs)",
               [&](const std::string& v) { mo.save_grads = v; });
  ap.add_value("--roofline", "FILE", "MFU 'p' against this roofline (ladder roofline --out) instead of a probe",
               [&](const std::string& v) { mo.roofline.file = v; });
  ap.add_flag("--no-op-count", "skip the extra profiled step (op counts and op_breakdown)",
              [&] { mo.count_ops = false; });
  ap.add_flag("--quiet", "no progress line", [&] { mo.quiet = true; });
}

// The config: a cell's config.json (what `ladder run`'s children get), or
// the preset and options of the command line.
RunConfig measure_config(const std::string& config_file, const ConfigOptions& c, const std::string& rung_name,
                         const LaunchEnv& env) {
  RunConfig cfg;
  if (!config_file.empty()) {
    std::ifstream f(config_file);
    if (!f) throw ConfigError(fmt::format("--config: cannot read '{}'", config_file));
    try {
      cfg = nlohmann::json::parse(f).get<RunConfig>();
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError(fmt::format("--config: '{}': {}", config_file, e.what()));
    }
    return cfg;
  }
  const std::string device = resolve_device(c.o);
  cfg = config_for(c.preset.value_or(default_preset(device)), c.o, device);
  const Rung rung = parse_rung(rung_name, "--rung");
  cfg.rung = rung.name;
  cfg.sw = rung.sw;
  cfg.world_size = env.world_size;
  return cfg;
}

// Under torchrun, mpirun or srun (or `ladder run --nproc-per-node`) this
// process is one rank of the ddp rung: the launcher's world must be the
// config's, and each rank takes its GPU by its local rank.
void join_launch(RunConfig& cfg, const LaunchEnv& env, const std::string& config_file) {
  if (!env.distributed()) return;
  if (cfg.world_size != env.world_size)
    throw ConfigError(fmt::format("--config: '{}' is for world_size {} but the {} environment says {} ranks; launch "
                                  "it with {} ranks",
                                  config_file, cfg.world_size, env.launcher, env.world_size, cfg.world_size));
  if (env.world_size > 1 && !cfg.sw.on(switches::ddp))
    throw ConfigError(fmt::format("--rung {}: launched as rank {} of {} by {}, but only the ddp rung runs on several "
                                  "ranks (use --rung ddp)",
                                  cfg.rung, env.rank, env.world_size, env.launcher));
  cfg.rank = env.rank;
  cfg.local_rank = env.local_rank;
  cfg.local_world_size = env.local_world_size;
  if (cfg.sw.on(switches::ddp) && cfg.device.rfind("cuda", 0) == 0) cfg.device = fmt::format("cuda:{}", env.local_rank);
}

// Everything that can be wrong before the first step, checked now (exit 2):
// the rung on this device, the config, the data, the test hooks, the
// roofline file, and the paths to write.
void check_measure(const RunConfig& cfg, MeasureOptions& mo, const ConfigOptions& c) {
  std::string why;
  if (!rung_runnable(Rung{cfg.rung, "", cfg.sw}, cfg.device, &why))
    throw ConfigError(fmt::format("--rung {}: {}", cfg.rung, why));
  validate_config(cfg);
  parse_device(cfg.device);
  check_token_source(cfg);
  if (const double slowdown = test_slowdown_pct(); slowdown > 0 && !mo.quiet)
    fmt::print(stderr, "ladder: warning: {}={} (test-only): every step waits that share of its time more\n",
               kTestSlowdownEnv, slowdown);
  if (!mo.roofline.file.empty()) {  // read once, here: the bf16 check and the report use it
    mo.roofline.roofline = read_roofline_file(mo.roofline.file);
    run_roofline_entry(*mo.roofline.roofline, Precision::kFP32, device_name(parse_device(cfg.device)),
                       mo.roofline.file);
  }
  if (mo.run_id.empty()) mo.run_id = new_run_id();
  if (mo.report_path.empty()) {
    const std::string out = c.out_dir.empty() ? (fs::path("runs") / mo.run_id).string() : c.out_dir;
    ensure_writable_dir(out, "--out");
    mo.report_path = report_path(out, cfg.rung);
  } else {
    ensure_writable_dir(fs::path(mo.report_path).parent_path().string(), "--report");
  }
  for (const auto& [file, flag] : {std::pair{mo.save_init, "--save-init"}, std::pair{mo.save_final, "--save-final"},
                                   std::pair{mo.save_grads, "--save-grads"}})
    if (!file.empty() && fs::path(file).has_parent_path())
      ensure_writable_dir(fs::path(file).parent_path().string(), flag);
}


}  // namespace

int measure_command(const std::vector<std::string>& args, const std::vector<std::string>& argv) {
  ConfigOptions c;
  MeasureOptions mo;
  std::string config_file, rung_name = kBaseRungName;
  ArgParser ap("measure",
               "Measure one rung in this process and write its report (what each child process\n"
               "of 'ladder run' does). Takes the same options as run, or --config CELL.json.");
  add_measure_options(ap, c, mo, config_file, rung_name);
  if (!ap.parse(args)) return 0;
  mo.launch = detect_launch_env(process_environment());
  RunConfig cfg = measure_config(config_file, c, rung_name, mo.launch);
  join_launch(cfg, mo.launch, config_file);
  check_measure(cfg, mo, c);
  mo.argv = argv;
  measure_rung(cfg, mo);
  if (!mo.quiet && mo.label.empty() && cfg.rank == 0) fmt::print(stderr, "report: {}\n", mo.report_path);
  return 0;
}


}  // namespace ladder
