// bench/run/run_command.cpp: option parsing for `ladder run` (see run_command.h).
#include "bench/run/run_command.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/measure/device/device.h"
#include "bench/run/matrix.h"
#include "bench/run/peers.h"
#include "bench/measure/observers/op_slowdown.h"
#include "bench/measure/observers/rank_slowdown.h"
#include "bench/measure/roofline/roofline.h"
#include "bench/run/child_process.h"
#include "bench/run/job.h"
#include "bench/run/run_dir.h"
#include "bench/run/runner.h"
#include "bench/measure/config_options.h"
#include "profiler/common/atomic_file.h"
#include "profiler/common/cli.h"
#include "reports/model/report/report.h"
#include "reports/model/report/report_loader.h"
#include "reports/render/reporter.h"
#include "variants/data/data_source.h"
#include "variants/fused_linear/fused_linear.h"
#include "variants/config/rungs.h"

namespace ladder {

namespace fs = std::filesystem;

namespace {

// The ddp rung's default rank count: one per visible GPU; on CPU two ranks
// that split the cores (enough to exercise real data parallelism over Gloo).
int64_t default_nproc(const std::string& device) {
  return device.rfind("cuda", 0) == 0 ? std::max<int64_t>(1, int64_t(torch::cuda::device_count())) : 2;
}

// Opens and checks each distinct data set-up the cells will read (token
// shards depend on B, T, V and the world size), so bad data exits 2 before
// any child runs.
void check_cells_data(const std::vector<Cell>& cells) {
  std::set<std::string> seen;
  for (const auto& cell : cells) {
    if (!cell.runnable || cell.cfg.data.path.empty()) continue;
    const auto& c = cell.cfg;
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}", c.data.path, c.data.format, c.batch,
                                        c.seq, c.model.vocab_size, c.world_size);
    if (seen.insert(key).second) check_token_source(c);
  }
}

std::string self_exe() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot resolve /proc/self/exe: " + ec.message());
  return p.string();
}


}  // namespace

namespace {

// What `ladder run` was asked, before it is resolved into cells.
struct RunArgs {
  ConfigOptions c;
  MatrixSpec spec;
  RunnerOptions ro;
  std::string matrix_file, resume_dir, roofline_file;
  std::optional<int64_t> parity_steps, repeats, nproc;
  bool repeat_auto = false;
  bool plan_only = false;
  std::optional<double> target_ci_pct, time_budget_min, memory_budget_gib;
  std::optional<std::string> ab;
  std::optional<std::string> rungs, mode;
  std::optional<std::vector<std::string>> peers;
};

void add_run_options(ArgParser& ap, RunArgs& a) {
  add_config_options(ap, a.c);
  ap.add_value("--rungs", "a,b,c", "rungs to run: ladder names, composites RUNG+SWITCH..., top, top-SWITCH",
               [&](const std::string& v) { a.rungs = v; });
  ap.add_value("--mode", "ladder|ablation|memory",
               "cumulative ladder (default); each switch alone and left out; or the memory extras (zero1, "
               "act-ckpt) beside fp32 and ddp",
               [&](const std::string& v) { a.mode = v; });
  ap.add_value("--memory-budget", "GiB",
               "memory per device: a rung whose estimate exceeds it is not run, marked 'does not fit' (default: "
               "none; on CUDA an out-of-memory stays a recorded failure)",
               [&](const std::string& v) { a.memory_budget_gib = parse_double("--memory-budget", v); });
  ap.add_flag("--plan",
              "print the cells the run would make (each with its ranks, its memory estimate per device and "
              "whether it runs, or why not) and run nothing; with --memory-budget, which presets and batch "
              "sizes fit",
              [&] { a.plan_only = true; });
  ap.add_value("--matrix", "FILE", "JSON matrix: presets x batch x seq x rungs (see bench/README.md)",
               [&](const std::string& v) { a.matrix_file = v; });
  ap.add_value("--resume", "RUN_DIR", "finish an interrupted run, keeping complete reports",
               [&](const std::string& v) { a.resume_dir = v; });
  ap.add_value("--rung-timeout", "SECONDS", "mark a rung failed after this long (default 3600)",
               [&](const std::string& v) { a.ro.rung_timeout_s = parse_double("--rung-timeout", v); });
  ap.add_value("--parity-steps", "K", "steps whose losses must match fp32 (default 5)",
               [&](const std::string& v) { a.parity_steps = parse_int("--parity-steps", v); });
  ap.add_value("--repeat", "N|auto",
               fmt::format("run each rung in N processes, interleaved in rounds (all rungs, then all again); figures "
                           "are medians of per-process medians and ratios carry 95 % intervals. Default: {} processes "
                           "of {} measured steps each (--steps sets them); with --repeat N each process measures "
                           "--steps (default 10). auto: {} rounds as by default, then more for the rungs whose "
                           "intervals are wider than --target-ci, within --time-budget",
                           kDefaultRepeats, kDefaultStepsPerProcess, kDefaultRepeats),
               [&](const std::string& v) {
                 a.repeat_auto = v == "auto";  // the last --repeat wins, like every option
                 a.repeats = a.repeat_auto ? std::nullopt : std::optional<int64_t>(parse_int("--repeat", v));
               });
  ap.add_value("--target-ci", "PCT",
               "--repeat auto: a ratio is narrow enough when its 95 % interval is within +-PCT % (default 2)",
               [&](const std::string& v) { a.target_ci_pct = parse_double("--target-ci", v); });
  ap.add_value("--time-budget", "MIN",
               "--repeat auto: start no round that would end after MIN minutes (default: twice the first rounds')",
               [&](const std::string& v) { a.time_budget_min = parse_double("--time-budget", v); });
  ap.add_value("--ab", "exe:PATH|env:VAR=VALUE[,VAR=VALUE]|same",
               "A/B in one run: every rung on two sides, interleaved (A B, then B A), and their paired ratio with "
               "its interval. exe:PATH: side A runs that build of ladder (the baseline), side B this one; "
               "env:VAR=VALUE: side B runs with those variables; same: an A/A check",
               [&](const std::string& v) { a.ab = v; });
  ap.add_value("--nproc-per-node", "N", "ranks of the ddp rung on this machine (default: GPUs, or 2 on CPU)",
               [&](const std::string& v) { a.nproc = parse_int("--nproc-per-node", v); });
  ap.add_value("--peers", "none|NAME,...",
               fmt::format("PyTorch peers run after the rungs with fused-adamw's switches (scripts/peer.py; "
                           "'ladder peers' says what each is): {} (default: none on CPU, {} on CUDA)",
                           peer_names(false), peer_names(true)),
               [&](const std::string& v) { a.peers = parse_peers(v); });
  ap.add_value("--roofline", "FILE",
               "use this roofline (ladder roofline --out, measured on this device) instead of probing one "
               "before the rungs; it is copied into the run directory",
               [&](const std::string& v) { a.roofline_file = v; });
  ap.add_flag("--quiet", "no progress lines or table", [&] { a.ro.quiet = true; });
  ap.add_value("--format", "NAME",
               fmt::format("the table at the end: {} (default text)", format_names(DocumentKind::kRun)),
               [&](const std::string& v) { a.ro.format = v; });
}

// --ab exe:PATH: side A runs `PATH measure --config ...`, so PATH must be a
// build of ladder, which `PATH version` says ("ladder VERSION (COMMIT), ...").
void check_side_a_exe(const std::string& exe, const std::string& expected) {
  if (exe.empty() || access(exe.c_str(), X_OK) != 0)
    throw ConfigError(fmt::format("--ab: '{}' is not an executable file; {}", exe, expected));
  std::string log = (fs::temp_directory_path() / "ladder-ab-version-XXXXXX").string();
  const int fd = mkstemp(log.data());
  if (fd < 0) throw std::runtime_error(fmt::format("--ab: cannot make a temporary file: {}", std::strerror(errno)));
  close(fd);
  const ChildOutcome out = run_children({exe, "version"}, {EnvVars{}}, 60, 0, ChildOutput{log}).front();
  std::string first_line;
  std::ifstream printed(log);
  std::getline(printed, first_line);
  fs::remove(log);
  if (out.exited && out.exit_code == 0 && first_line.rfind("ladder ", 0) == 0) return;
  throw ConfigError(fmt::format("--ab: exe:{} is not a build of ladder: '{} version' {}{}; {}", exe, exe,
                                describe_outcome(out),
                                out.exited && out.exit_code == 0 ? " without printing 'ladder VERSION ...'" : "",
                                expected));
}

// --ab: what differs between the sides of a one-run A/B comparison.
void set_ab(const std::string& spec, RunnerOptions& ro) {
  const std::string expected = "expected exe:PATH (side A runs that ladder), env:VAR=VALUE[,VAR=VALUE] (side B runs "
                               "with them) or same (an A/A check)";
  ro.sides = {"A", "B"};
  ro.ab_spec = spec;
  if (spec == "same") return;
  if (spec.rfind("exe:", 0) == 0) {
    ro.side_a_exe = spec.substr(4);
    check_side_a_exe(ro.side_a_exe, expected);
    return;
  }
  if (spec.rfind("env:", 0) == 0) {
    for (const auto& item : split_csv(spec.substr(4))) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        throw ConfigError(fmt::format("--ab: '{}' in '{}' is not VAR=VALUE; {}", item, spec, expected));
      ro.side_b_env.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    }
    if (!ro.side_b_env.empty()) return;
  }
  throw ConfigError(fmt::format("--ab: got '{}'; {}", spec, expected));
}

// Bounds of the run's own options; every bad value exits 2 before any rung runs.
void check_run_args(const RunArgs& a) {
  find_reporter("--format", a.ro.format, DocumentKind::kRun);
  if (a.nproc && (*a.nproc < 1 || *a.nproc > 256))
    throw ConfigError(fmt::format("--nproc-per-node: got {}, expected 1..256 ranks", *a.nproc));
  if (a.repeats && (*a.repeats < 1 || *a.repeats > 100))
    throw ConfigError(fmt::format("--repeat: got {}, expected 1..100 processes per rung, or auto", *a.repeats));
  if (a.target_ci_pct && !(*a.target_ci_pct > 0 && *a.target_ci_pct < 100))
    throw ConfigError(fmt::format("--target-ci: got {}, expected a percentage in (0, 100)", *a.target_ci_pct));
  if (a.time_budget_min && !(*a.time_budget_min > 0))
    throw ConfigError(fmt::format("--time-budget: got {}, expected minutes > 0", *a.time_budget_min));
  if ((a.target_ci_pct || a.time_budget_min) && !a.repeat_auto)
    throw ConfigError("--target-ci and --time-budget steer --repeat auto; expected --repeat auto with them");
  if (!(a.ro.rung_timeout_s > 0))
    throw ConfigError(fmt::format("--rung-timeout: got {}, expected seconds > 0", a.ro.rung_timeout_s));
  if (a.memory_budget_gib && !(*a.memory_budget_gib > 0 && *a.memory_budget_gib < 1e6))
    throw ConfigError(fmt::format("--memory-budget: got {}, expected GiB per device > 0", *a.memory_budget_gib));
}

// Named rungs (--rungs, or the matrix file's) are what runs in every mode;
// memory mode does nothing but choose its rungs, so with named ones it is
// moot: say what runs instead of its set, and why.
void note_rungs_over_memory_mode(const RunArgs& a) {
  const MatrixSpec& spec = a.spec;
  if (spec.mode != "memory" || spec.rungs.empty()) return;
  std::string named, own;
  for (const auto& r : spec.rungs) named += (named.empty() ? "" : ", ") + r;
  for (const auto& r : memory_rungs()) own += (own.empty() ? "" : ", ") + r.name;
  fmt::print(stderr,
             "ladder: {} with {}: running the rungs named ({}) instead of memory mode's ({}): named rungs choose "
             "what runs in every mode, and choosing rungs is all memory mode does; for memory mode's rungs, name "
             "no rungs\n",
             a.mode ? "--mode memory" : fmt::format("mode \"memory\" of {}", a.matrix_file),
             a.rungs ? "--rungs" : fmt::format("the rungs of {}", a.matrix_file), named, own);
}

// The matrix: the matrix file, then the CLI's values over it; the device,
// ranks, presets, shapes and peers resolved.
void resolve_spec(RunArgs& a) {
  MatrixSpec& spec = a.spec;
  if (!a.matrix_file.empty()) read_matrix_file(a.matrix_file, spec);
  if (a.rungs) {
    spec.rungs = split_csv(*a.rungs);
    if (spec.rungs.empty() || a.rungs->front() == ',' || a.rungs->back() == ',' ||
        a.rungs->find(",,") != std::string::npos)
      throw ConfigError(fmt::format("--rungs: got '{}', which names an empty rung; expected a comma-separated list of "
                                    "rung names (see 'ladder switches'), or no --rungs for the whole ladder",
                                    *a.rungs));
  }
  if (a.mode) spec.mode = *a.mode;
  note_rungs_over_memory_mode(a);
  if (a.parity_steps) spec.parity_steps = *a.parity_steps;
  Overrides o = a.c.o;  // CLI values win over the matrix file's
  if (!o.device) o.device = spec.overrides.device;
  o.fields.fill_missing_from(spec.overrides.fields);
  spec.overrides = o;
  spec.device = resolve_device(o);
  spec.nproc_per_node = int(a.nproc.value_or(default_nproc(spec.device)));
  // Named rungs (CLI or matrix file) or a rank count ask for ddp explicitly.
  spec.ddp_requested = a.nproc.has_value() || !spec.rungs.empty();
  spec.device_memory_bytes = device_memory_bytes(parse_device(spec.device));
  if (a.memory_budget_gib) {
    spec.memory_budget_bytes = int64_t(*a.memory_budget_gib * double(1ll << 30));
    // The parity references (one process at the whole batch) are sized to the budget too.
    if (spec.device_memory_bytes <= 0 || spec.memory_budget_bytes < spec.device_memory_bytes)
      spec.device_memory_bytes = spec.memory_budget_bytes;
  }
  if (a.c.preset) spec.presets = {*a.c.preset};
  if (spec.presets.empty()) spec.presets = {default_preset(spec.device)};
  // An A/B run compares two builds or configs of ladder: the peers would be
  // the same on both sides.
  if (a.ab && a.peers && !a.peers->empty())
    throw ConfigError("--peers: an A/B run (--ab) compares two sides of ladder, which the PyTorch peers are not; "
                      "expected --peers none, or no --ab");
  spec.peers = a.ab ? std::vector<std::string>{} : a.peers.value_or(default_peers(spec.device));
  a.ro.peers = spec.peers;
  a.ro.peers_source = a.peers ? "--peers"
                      : spec.device.rfind("cuda", 0) == 0
                          ? "default on CUDA: eager and compile"
                          : "default on CPU: none (torch.compile's first step compiles for a minute or more here; "
                            "ask with --peers)";
  // Two processes per rung by default (kDefaultRepeats): each measures fewer
  // steps, unless the steps were asked for.
  if (!a.repeats && !spec.overrides.fields.get<int64_t>("steps"))
    spec.overrides.fields.set("steps", int64_t(kDefaultStepsPerProcess));
  // A single --batch or --seq is the matrix's one batch or seq.
  if (const auto b = a.c.o.fields.get<int64_t>("batch")) spec.batches = {*b};
  if (const auto t = a.c.o.fields.get<int64_t>("seq")) spec.seqs = {*t};
}

// --resume: the saved run's cells; options that shape the matrix must
// describe the saved one.
std::vector<Cell> resumed_cells(RunArgs& a, const ArgParser& ap) {
  RunnerOptions& ro = a.ro;
  ro.run_dir = a.resume_dir;
  ro.resume = true;
  std::vector<Cell> saved = load_run_dir(a.resume_dir, ro);
  const bool matrix_options = ap.any_given_except({"--resume", "--quiet", "--rung-timeout", "--repeat", "--format"});
  if (matrix_options && cells_to_json(build_cells(a.spec)) != cells_to_json(saved))
    throw ConfigError(fmt::format("--resume: '{}' was made with a different config; run 'ladder run --resume {}' "
                                  "alone to finish it as configured",
                                  a.resume_dir, a.resume_dir));
  if (a.repeat_auto || a.target_ci_pct || a.time_budget_min || a.ab)
    throw ConfigError(fmt::format("--resume: '{}' resumes with the rounds and sides it was made with; run 'ladder run "
                                  "--resume {}' without --repeat auto, --target-ci, --time-budget or --ab",
                                  a.resume_dir, a.resume_dir));
  if (a.repeats && *a.repeats != ro.repeats)
    throw ConfigError(fmt::format("--repeat: '{}' was made with --repeat {}, not {}; run 'ladder run --resume {}' "
                                  "alone to finish it as configured",
                                  a.resume_dir, ro.repeats, *a.repeats, a.resume_dir));
  if (!a.roofline_file.empty())
    throw ConfigError(fmt::format("--roofline: '{}' resumes with the roofline it was made with; run 'ladder run "
                                  "--resume {}' without --roofline",
                                  a.resume_dir, a.resume_dir));
  return saved;
}

// --memory-budget that no rung fits would run nothing and exit 0: refused,
// with the smallest estimate (--plan lists them all).
void check_budget_fits_a_rung(const std::vector<Cell>& cells, const RunArgs& a) {
  if (!a.memory_budget_gib) return;
  const Cell* smallest = nullptr;  // of the rungs held back by the budget
  int64_t smallest_bytes = 0;
  for (const auto& c : cells) {
    if (c.role != "measure") continue;
    if (c.runnable) return;
    const int64_t need = step_memory_estimate_bytes(c.cfg);
    if (need <= a.spec.memory_budget_bytes) continue;  // not run for another reason
    if (!smallest || need < smallest_bytes) {
      smallest = &c;
      smallest_bytes = need;
    }
  }
  if (!smallest) return;
  throw ConfigError(fmt::format("--memory-budget: got {} GiB per device, which no rung fits: the smallest estimate "
                                "is {:.4g} GiB ({}); expected a budget of at least that (--plan lists every rung's estimate)",
                                *a.memory_budget_gib, double(smallest_bytes) / double(1ll << 30), smallest->id));
}

// A new run: its cells, id and directory (which must not hold a run), and
// the --roofline file, checked and copied into it.
std::vector<Cell> new_cells(RunArgs& a) {
  RunnerOptions& ro = a.ro;
  ro.repeats = int(a.repeats.value_or(kDefaultRepeats));
  ro.repeat_auto = a.repeat_auto;
  ro.target_ci_pct = a.target_ci_pct.value_or(ro.target_ci_pct);
  ro.time_budget_s = a.time_budget_min ? *a.time_budget_min * 60 : 0;
  std::vector<Cell> cells = build_cells(a.spec);
  check_budget_fits_a_rung(cells, a);
  ro.run_id = new_run_id();
  ro.run_dir = a.c.out_dir.empty() ? (fs::path("runs") / ro.run_id).string() : a.c.out_dir;
  if (fs::exists(fs::path(ro.run_dir) / "matrix.json") || fs::exists(fs::path(ro.run_dir) / "summary.json"))
    throw ConfigError(fmt::format("--out: '{}' already holds a run (matrix.json or summary.json); expected "
                                  "a new directory, or finish that run with --resume {}",
                                  ro.run_dir, ro.run_dir));
  ensure_writable_dir(ro.run_dir, "--out");
  if (!a.roofline_file.empty()) {  // checked (kind, device, entries), then the run's own
    const RooflineFile roof = read_roofline_file(a.roofline_file);
    for (const Precision p : {Precision::kFP32, Precision::kTF32, Precision::kBF16})
      run_roofline_entry(roof, p, device_name(parse_device(a.spec.device)), a.roofline_file);
    write_file_atomically((fs::path(ro.run_dir) / "roofline.json").string(), fields::to_json(roof).dump(2) + "\n");
  }
  return cells;
}

// Before the first child: a warning for very long accumulation, and one line
// saying what runs where.
void announce(const std::vector<Cell>& cells, const RunArgs& a) {
  for (const auto& cell : cells)
    if (cell.role == "measure" && cell.runnable && cell.cfg.micro_steps() > 64)
      fmt::print(stderr,
                 "ladder: warning: {} runs {} micro-steps of {} tokens per step ({} tokens); pass "
                 "--total-batch to scale it down for this device\n",
                 cell.id, cell.cfg.micro_steps(), cell.cfg.tokens_per_micro_step(), cell.cfg.tokens_per_step());
  if (a.ro.quiet) return;
  size_t measured = 0, peer_cells = 0;
  for (const auto& cell : cells) {
    measured += cell.role == "measure" && cell.runnable;
    peer_cells += cell.role == "peer";
  }
  fmt::print(stderr, "ladder: {} rung(s){} on {} ({} mode{}), run directory {}\n", measured,
             peer_cells ? fmt::format(" and {} PyTorch peer(s)", peer_cells) : "", a.spec.device, a.ro.mode,
             a.ro.repeat_auto ? fmt::format(", {} rounds and more while intervals are wider than +-{} %",
                                            a.ro.repeats, a.ro.target_ci_pct)
             : a.ro.repeats > 1 ? fmt::format(", {} processes per rung, interleaved", a.ro.repeats)
                                : std::string(),
             a.ro.run_dir);
  if (!a.ro.sides.empty())
    fmt::print(stderr, "ladder: A/B in one run ({}): every rung on sides A and B, interleaved\n", a.ro.ab_spec);
}

// --plan: the cells, their estimate per device and whether each would run,
// on stdout; nothing runs and nothing is written.
int print_plan(const std::vector<Cell>& cells, const MatrixSpec& spec) {
  size_t width = 4;
  for (const auto& c : cells) width = std::max(width, c.id.size());
  fmt::print("{:<{}}  {:<7} {:>5} {:>8}  {}\n", "cell", width, "role", "ranks", "est GiB", "runs");
  for (const auto& c : cells) {
    const std::string est =
        c.role == "peer" ? "-" : fmt::format("{:.2f}", double(step_memory_estimate_bytes(c.cfg)) / double(1ll << 30));
    fmt::print("{:<{}}  {:<7} {:>5} {:>8}  {}\n", c.id, width, c.role, c.cfg.world_size, est,
               c.runnable ? std::string("yes") : "no: " + c.not_runnable_reason);
  }
  fmt::print("est GiB: the analytic estimate per device (bench/measure/report/memory.h){}\n",
             spec.memory_budget_bytes > 0
                 ? fmt::format(", against --memory-budget {:.2f} GiB", double(spec.memory_budget_bytes) / (1ll << 30))
                 : std::string("; no --memory-budget, so nothing is held back by it"));
  return 0;
}

}  // namespace

int run_command(const std::vector<std::string>& args, const std::vector<std::string>& argv) {
  RunArgs a;
  ArgParser ap("run",
               "Run the benchmark matrix: every rung of the GPT-2 speedup ladder (default) on the\n"
               "default preset, each in its own process; check loss parity against fp32; write\n"
               "<run_dir>/<rung>/report.json, <run_dir>/summary.json and print the table.\n"
               "Exit: 0 all rungs ok and in parity, 1 a rung failed or broke parity, 2 bad input,\n"
               "130 interrupted (resume with --resume RUN_DIR).");
  add_run_options(ap, a);
  if (!ap.parse(args)) return 0;
  check_run_args(a);
  resolve_spec(a);
  a.ro.exe = self_exe();
  a.ro.argv = argv;
  a.ro.mode = a.spec.mode;
  a.ro.parity_steps = a.spec.parity_steps;
  if (a.ab && a.resume_dir.empty()) set_ab(*a.ab, a.ro);  // a plan checks it too
  if (a.plan_only) {
    if (!a.resume_dir.empty()) throw ConfigError("--plan: a plan is of a new run; expected no --resume with it");
    return print_plan(build_cells(a.spec), a.spec);
  }
  const std::vector<Cell> cells = a.resume_dir.empty() ? new_cells(a) : resumed_cells(a, ap);
  check_cells_data(cells);
  check_test_slowdown(cells, !a.ro.sides.empty());
  test_slow_rank(a.spec.nproc_per_node);  // the ddp rung's hook: a bad value stops the run before it starts
  test_slow_op();                          // the operator hook's, likewise
  announce(cells, a);
  return run_matrix(cells, a.ro);
}

}  // namespace ladder
