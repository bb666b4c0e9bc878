// bench/measure/measure.cpp: one rung in this process, as setup, run and report (see
// measure.h): set_up builds what the steps need, run_steps runs them under
// the harness with this process's observers, gather_facts collects what the
// report says besides the steps, and the report comes from the one builder
// (bench/measure/report/rung_report.h) that peers use too.
#include "bench/measure/measure.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "bench/measure/device/cpu_allocator.h"
#include "bench/measure/device/device.h"
#include "bench/measure/device/environment.h"
#include "bench/measure/harness/harness.h"
#include "bench/measure/harness/op_breakdown.h"
#include "bench/measure/observers/progress.h"
#include "bench/measure/observers/op_slowdown.h"
#include "bench/measure/observers/rank_slowdown.h"
#include "bench/measure/roofline/roofline.h"
#include "bench/measure/report/rung_report.h"
#include "bench/measure/harness/step_columns.h"
#include "bench/measure/harness/step_metrics.h"
#include "bench/measure/observers/traffic_monitor.h"
#include "profiler/common/atomic_file.h"
#include "profiler/ranges/range.h"
#include "profiler/trace/trace_profiler.h"
#include "reports/model/report/report.h"
#include "reports/model/report/report_loader.h"
#include "reports/stats/stats.h"
#include "variants/data/data_source.h"
#include "variants/ddp/process_group.h"
#include "variants/step/step.h"

namespace ladder {

namespace {

using nlohmann::json;

// A non-finite loss or gradient norm: the rung's status is "diverged".
struct Diverged : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A {name: tensor} dict that torch.load reads, written atomically.
void save_named(const std::vector<std::pair<std::string, torch::Tensor>>& named, const std::string& path) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [name, t] : named) dict.insert(name, t.detach().to(torch::kCPU).clone());
  const auto bytes = torch::pickle_save(c10::IValue(dict));
  write_file_atomically(path, std::string(bytes.begin(), bytes.end()));
}

void save_weights(GPT& model, const std::string& path) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : model->named_parameters()) named.emplace_back(item.key(), item.value());
  save_named(named, path);
}

// Test-only fault injection for the ddp rung: LADDER_TEST_FAULT=kill:R:S
// (rank R sends itself SIGKILL after step S) or hang:R:S (SIGSTOP: a hung
// rank). The fault tests check that the other ranks fail within the timeout.
class FaultHook final : public StepObserver {
 public:
  FaultHook(std::string action, int64_t step) : action_(std::move(action)), step_(step) {}
  void after_step(StepRecord& rec, bool) override {
    if (action_.empty() || rec.step != step_) return;
    fmt::print(stderr, "{} set: {} this rank after step {} (test hook)\n", kFaultHookEnv, action_, rec.step);
    std::fflush(stderr);
    std::raise(action_ == "kill" ? SIGKILL : SIGSTOP);
  }

 private:
  std::string action_;
  int64_t step_;
};

FaultHook read_fault_hook(int rank) {
  const char* v = std::getenv(kFaultHookEnv);
  if (!v) return {"", -1};
  char action[16] = {0};
  int r = -1;
  long long s = -1;
  if (std::sscanf(v, "%15[a-z]:%d:%lld", action, &r, &s) != 3 ||
      (std::string(action) != "kill" && std::string(action) != "hang"))
    throw ConfigError(fmt::format("{}='{}': expected kill:RANK:STEP or hang:RANK:STEP", kFaultHookEnv, v));
  if (r != rank) return {"", -1};
  return {action, s};
}

// The trace profiler (profiler/trace/trace_profiler.h) on the harness's list.
class TraceObserver final : public StepObserver {
 public:
  explicit TraceObserver(profiler::TraceProfiler& t) : t_(t) {}
  void before_step(int64_t step, bool) override { t_.before_step(step); }
  void step_begins(int64_t step) override { t_.step_begins(step); }
  void step_ends(int64_t step) override { t_.step_ends(step); }
  void after_step(StepRecord& rec, bool) override { t_.after_step(rec.step); }
  void measurement_ends(int64_t last_step) override { t_.finish(last_step); }

 private:
  profiler::TraceProfiler& t_;
};

// One rank's phases per measured step, the communication wait taken out:
// the phase clock's (wall or device time), or with `cpu` the process's CPU
// time over its `threads` intra-op threads (the all-reduce wait's CPU time left out).
RankPhaseSteps rank_phases(const std::vector<StepRecord>& steps, bool cpu, int threads) {
  RankPhaseSteps p;
  for (const StepRecord& s : steps) {
    std::array<double, 4> ms = cpu ? s.phase_cpu_ms : compute_phase_ms(s);
    if (cpu)
      for (double& v : ms) v /= double(std::max(1, threads));
    p.data.push_back(ms[size_t(Phase::kData)]);
    p.forward.push_back(ms[size_t(Phase::kForward)]);
    p.backward.push_back(ms[size_t(Phase::kBackward)]);
    p.optimizer.push_back(ms[size_t(Phase::kOptimizer)]);
    p.communication.push_back(comm_wait_ms(s));
  }
  return p;
}

// One rank's figures for rank 0's report: per-step arrays and medians, its
// phases per step and its op breakdown's bands (when measured).
RankFigures rank_figures(const RunConfig& c, const torch::Device& device, const HarnessResult& r,
                         const std::optional<profiler::OpBreakdownSection>& breakdown) {
  const StepColumns cols = step_columns(r.steps, MetricContext{c.world_size});
  RankFigures out;
  RankFacts& facts = out.facts;
  facts.rank = c.rank;
  facts.local_rank = c.local_rank;
  facts.host = host_name();
  facts.peak_rss_bytes = r.memory.peak_rss_bytes;
  facts.peak_reserved_bytes = r.memory.peak_reserved_bytes;
  facts.peak_allocated_bytes = r.memory.allocated_measured(device.is_cuda())
                                   ? std::optional<int64_t>(r.memory.peak_allocated_bytes)
                                   : std::nullopt;
  if (!r.steps.empty() && r.steps.front().has_phases) facts.phases_ms = rank_phases(r.steps, false, c.threads);
  if (!r.steps.empty() && r.steps.front().has_phase_cpu)
    facts.cpu_phases_ms = rank_phases(r.steps, true, c.threads);
  if (breakdown && breakdown->categories_ms) facts.bands_ms = *breakdown->categories_ms;
  for (const StepMetric& m : step_metrics())
    if (const auto it = cols.columns.find(m.key); m.ranks != RankScope::kNone && it != cols.columns.end())
      out.columns[m.key] = it->second;
  // Per device, in a rank's figures: this rank's own tokens over its own step
  // times (the step metric divides the run's tokens/s by the ranks).
  StepColumn& own_tok_s = out.columns["tokens_per_s_per_device"] = StepColumn{};
  for (const auto& s : r.steps) own_tok_s.values.push_back(double(s.tokens / c.world_size) / (s.dt_ms * 1e-3));
  for (const auto& [key, column] : out.columns) facts.median[key] = summarize(column.values).median;
  return out;
}

// The facts of rank 0's ddp section (bench/measure/report/rung_report.h builds it): the
// process group, and every rank's figures, which the other ranks hand to
// rank 0 through the group's store; null on the other ranks.
std::optional<DdpFacts> ddp_facts(const RunConfig& c, const torch::Device& device, const LaunchEnv& env,
                                  ProcessGroup& pg, const HarnessResult& r, const std::vector<std::string>& interfaces,
                                  const std::optional<profiler::OpBreakdownSection>& breakdown,
                                  const std::optional<SlowRankSpec>& slow_rank) {
  RankFigures mine = rank_figures(c, device, r, breakdown);
  if (c.rank != 0) {
    pg.set(fmt::format("figures/{}", c.rank), json(mine).dump());
    return std::nullopt;
  }
  DdpFacts d;
  d.world_size = c.world_size;
  d.backend = pg.backend_name();
  d.launcher = env.launcher;
  d.master = pg.master();
  d.first_timeout_s = c.ddp.first_timeout_s;
  d.timeout_s = c.ddp.timeout_s;
  d.connect_timeout_s = c.ddp.connect_timeout_s;
  d.interfaces = interfaces;
  d.zero1 = c.sw.on(switches::zero1);
  if (slow_rank) d.test_slow_rank = TestSlowRank{slow_rank->rank, slow_rank->pct};
  d.per_rank.push_back(mine);
  for (int k = 1; k < c.world_size; ++k)
    d.per_rank.push_back(fields::from_json<RankFigures>(json::parse(pg.get(fmt::format("figures/{}", k))),
                                                        fmt::format("rank {}'s figures", k)));
  return d;
}

// What measure_rung builds before the first step.
struct Setup {
  torch::Device device{torch::kCPU};
  bool ranks_share_cpu = false;
  std::optional<CpuAllocatorSection> cpu_allocator;
  std::unique_ptr<ProcessGroup> pg;
  std::unique_ptr<TrafficMonitor> traffic;  // with pg
  std::unique_ptr<profiler::TraceProfiler> tracer;
  std::unique_ptr<TrainStep> step;
  std::optional<SlowRankSpec> slow_rank;  // the test hook, in a ddp job
  std::optional<RankSlowdown> slowdown;   // on the rank it slows
  std::optional<SlowOpSpec> slow_op;  // the test hook of one operator: on in the profiled steps
};

std::unique_ptr<ProcessGroup> rendezvous(const RunConfig& c, const MeasureOptions& o, const torch::Device& device) {
  DistOptions d;
  d.rank = c.rank;
  d.world_size = c.world_size;
  d.master_addr = o.launch.master_addr.empty() ? "127.0.0.1" : o.launch.master_addr;
  // Without a launcher this is a one-rank job: any free port will do.
  d.master_port = o.launch.distributed() ? o.launch.master_port : 0;
  d.store_is_hosted = o.launch.launcher_hosts_store;
  d.connect_timeout_s = c.ddp.connect_timeout_s;
  d.timeout_s = c.ddp.first_timeout_s;
  d.device = device;
  return ProcessGroup::create(d);
}

// Built before the steps: a bad --profile schedule stops here, with exit code 2.
std::unique_ptr<profiler::TraceProfiler> make_tracer(const RunConfig& c, const MeasureOptions& o,
                                                     const torch::Device& device, ProcessGroup* pg) {
  if (c.profile.empty()) return nullptr;
  profiler::TraceOptions t;
  t.schedule = c.profile;
  t.total_steps = c.total_steps();
  t.dir = (std::filesystem::path(o.report_path).parent_path() / "traces").string();
  t.rank = c.rank;
  t.world_size = c.world_size;
  t.cuda = device.is_cuda();
  t.quiet = o.quiet;
  if (pg) {
    t.backend = pg->backend_name();
    t.barrier = [pg] { pg->barrier(); };
  }
  return std::make_unique<profiler::TraceProfiler>(std::move(t));
}

// Threads, the CPU allocator, the rendezvous, the tracer, bf16 on a CPU, the
// step, and the test crash hook. `c` gets its resolved threads and bf16.
Setup set_up(RunConfig& c, const MeasureOptions& o, Position& position) {
  Setup s;
  s.device = parse_device(c.device);
  // LibTorch may default to one intra-op thread on a VM: set it explicitly.
  // With no --threads the ranks of a CPU job split the host's cores, and MFU
  // is per host (the run roofline used all of them); with --threads T each
  // rank is a T-thread device of its own.
  s.ranks_share_cpu = s.device.is_cpu() && c.threads == 0;
  if (c.threads == 0)
    c.threads = int(std::max(1u, std::thread::hardware_concurrency() / unsigned(std::max(1, c.local_world_size))));
  at::set_num_threads(c.threads);
  // Before the model exists: its tensors and every step's come from the heap.
  if (s.device.is_cpu()) s.cpu_allocator = keep_cpu_memory_in_process();
  // Read here, so that a malformed value stops the process before the
  // rendezvous; its callback is added just before the op breakdown's steps.
  s.slow_op = test_slow_op();
  if (c.sw.on(switches::ddp)) {
    s.slow_rank = test_slow_rank(c.world_size);  // a malformed value stops here, before the rendezvous
    if (s.slow_rank && s.slow_rank->rank == c.rank) s.slowdown.emplace(s.slow_rank->pct);
    position.phase = "rendezvous";
    s.pg = rendezvous(c, o, s.device);
    s.traffic = std::make_unique<TrafficMonitor>(*s.pg);
    position.phase = "setup";
  }
  s.tracer = make_tracer(c, o, s.device, s.pg.get());
  position.phase = "bf16 probe";
  resolve_cpu_bf16(c, o.roofline.roofline, s.device);
  position.phase = "setup";
  s.step = std::make_unique<TrainStep>(c, s.device, make_token_source(c, s.device), s.pg.get());
  if (!o.save_init.empty()) save_weights(s.step->model(), o.save_init);
  if (!o.save_grads.empty()) s.step->keep_gradients_of_step(0);
  if (const char* crash = std::getenv(kCrashHookEnv); crash && c.rung == crash) {
    fmt::print(stderr, "[{}] {} set: aborting on purpose (test hook)\n", c.rung, kCrashHookEnv);
    std::fflush(stderr);
    std::abort();
  }
  return s;
}

// The warm-up and measured steps under the harness, with this process's
// observers: where a failure happened, the tracer, the progress line (rank
// 0's) and the test fault hook, innermost first.
HarnessResult run_steps(Setup& s, const RunConfig& c, const MeasureOptions& o, Position& position) {
  Progress progress(o.label.empty() ? c.rung : o.label, c.warmup, c.steps, o.quiet || c.rank != 0);
  FaultHook fault = read_fault_hook(c.rank);
  std::optional<TraceObserver> trace;
  std::vector<StepObserver*> watchers = {&position};
  // Inside the tracer: its barriers at the trace's start and end fall outside a step's traffic.
  if (s.traffic) watchers.push_back(s.traffic.get());
  if (s.tracer) watchers.push_back(&trace.emplace(*s.tracer));
  watchers.push_back(&progress);
  watchers.push_back(&fault);
  std::vector<StepObserver*> inner;
  if (s.slowdown) inner.push_back(&*s.slowdown);
  return run_measurement(*s.step, c, s.device, watchers, inner);
}

// A NaN or inf loss or gradient norm fails the rung, the baseline too: its
// figures would time a diverged run.
void check_finite(const HarnessResult& r, Position& position) {
  for (const auto* steps : {&r.warmup_steps, &r.steps})
    for (const auto& s : *steps)
      if (!std::isfinite(s.loss) || !std::isfinite(s.grad_norm)) {
        position.step = s.step;
        position.phase = "step";
        throw Diverged(fmt::format("the run diverged at step {}: loss {}, gradient norm {}", s.step, s.loss,
                                   s.grad_norm));
      }
}

// What the report says besides the steps. Every rank runs the op breakdown's
// extra steps and the ddp gather together; rank 0 alone saves weights.
MeasuredRun gather_facts(Setup& s, const RunConfig& c, const MeasureOptions& o, const HarnessResult& r,
                         Position& position, const std::string& started_at) {
  MeasuredRun m;
  m.cfg = c;
  m.run_id = o.run_id;
  m.started_at = started_at;
  m.argv = o.argv;
  m.device = s.device;
  m.environment = describe_environment(s.device);
  m.device_name = m.environment.device.name;
  TrainStep& step = *s.step;
  // What the warm-up and measured steps consumed, before the op breakdown's
  // extra steps read more; the switches after the run (the gradient sync's
  // event order is known by now).
  m.data = step.data().describe();
  m.switches = step.describe_switches();
  m.plan = step.plan();
  m.gemm_plan = step.describe_gemm_plan();
  m.attention_plan = step.attention_plan();
  if (!o.save_final.empty() && c.rank == 0) save_weights(step.model(), o.save_final);
  if (!o.save_grads.empty() && c.rank == 0) save_named(step.kept_gradients(), o.save_grads);
  if (o.count_ops && profiler::compiled_in()) {
    position.phase = "op breakdown";
    const OpSlowdown slowed(s.slow_op);  // in every process: see op_slowdown.h
    OpProfile ops = profile_ops(step, s.device, r.next_step, kProfiledSteps, s.slowdown ? &*s.slowdown : nullptr);
    m.op_counts = std::move(ops.op_counts);
    m.op_breakdown = std::move(ops.op_breakdown);
    if (s.slow_op && m.op_breakdown) m.op_breakdown->test_slow_op = s.slow_op->text();
  }
  if (s.pg) m.ddp = ddp_facts(c, s.device, o.launch, *s.pg, r, s.traffic->interfaces(), m.op_breakdown, s.slow_rank);
  m.n_params = step.model()->num_params();
  m.n_params_without_wpe = step.model()->num_params(/*exclude_position_embeddings=*/true);
  if (s.tracer) m.profile = s.tracer->section();
  m.cpu_allocator = s.cpu_allocator;
  m.graph = step.uses_graph();
  m.memory_monitor = "torchtitan-style: CUDA cache emptied before the warmup steps, peaks and counters reset when "
                     "measurement starts; peaks reset before every measured step and read after it (steps.peak_*)";
  m.data_time = "host wall time of the data phase (waiting for the batch, issuing its copy to the device), not "
                "synchronised; steps.data_ms per step";
  const int world = c.world_size;
  m.devices = s.ranks_share_cpu ? std::max(1, world / std::max(1, c.local_world_size)) : world;
  if (m.devices != world)
    m.tokens_basis = fmt::format("median tokens_per_s / {} host(s): the {} ranks on a host share its CPU", m.devices,
                                 c.local_world_size);
  m.roofline = o.roofline;
  return m;
}

// The report of a process that failed (an exception, an OOM, a divergence),
// naming the step and phase where it happened.
void write_failure_report(const RunConfig& c, const MeasureOptions& o, const std::string& started_at,
                          const std::exception& e, const Position& position) {
  const bool oom = dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr;
  const bool diverged = dynamic_cast<const Diverged*>(&e) != nullptr;
  FailureFacts f;
  f.status = oom ? "oom" : diverged ? "diverged" : "failed";
  f.reason = oom ? "out of memory" : diverged ? "diverged" : "exception";
  f.message = e.what();
  f.step = position.step;
  f.phase = position.phase;
  f.rank = c.rank;
  write_report(o.report_path, build_failure_report(c, o.run_id, o.argv, started_at, f));
}

}  // namespace

void measure_rung(RunConfig c, const MeasureOptions& o) {
  const std::string started_at = utc_now_iso8601();
  Position position;
  try {
    Setup s = set_up(c, o, position);
    const HarnessResult result = run_steps(s, c, o, position);
    const MeasuredRun facts = gather_facts(s, c, o, result, position, started_at);
    if (c.rank != 0) return;  // rank 0 writes the job's report
    // Checked after the op breakdown, whose extra steps every rank of a ddp
    // job must run together.
    check_finite(result, position);
    write_report(o.report_path, build_rung_report(facts, result));
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    if (c.rank == 0) write_failure_report(c, o, started_at, e, position);  // rank 0 reports for the job
    throw;
  }
}

}  // namespace ladder
