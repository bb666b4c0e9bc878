// bench/measure.cpp: see measure.h.
#include "bench/measure.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "bench/cpu_allocator.h"
#include "bench/device.h"
#include "bench/environment.h"
#include "bench/harness.h"
#include "bench/memory.h"
#include "bench/mfu.h"
#include "bench/op_breakdown.h"
#include "bench/progress.h"
#include "bench/roofline.h"
#include "bench/step_columns.h"
#include "profiler/common/atomic_file.h"
#include "profiler/range.h"
#include "profiler/trace_profiler.h"
#include "reports/report.h"
#include "reports/report_loader.h"
#include "reports/stats.h"
#include "variants/data_source.h"
#include "variants/ddp/process_group.h"
#include "variants/step.h"

namespace ladder {

namespace {

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

}  // namespace

// The precision MFU is measured against: what the rung's matmuls really ran in.
// The loosest numerics (SwitchDecl::numerics) among the switches in effect.
Precision mfu_precision(const RunConfig& c, const nlohmann::json& switches) {
  switch (loosest_numerics(numerics_in_effect(c.sw, switches))) {
    case Numerics::kBf16: return Precision::kBF16;
    case Numerics::kTf32: return Precision::kTF32;
    case Numerics::kFp32Exact: break;
  }
  return Precision::kFP32;
}

nlohmann::json mfu_section(const RunConfig& c, Precision precision, const std::string& dev_name,
                           double tokens_per_s, const std::string& tokens_basis, int64_t fpt,
                           const RooflineResult& roof, const nlohmann::json& roof_source) {
  nlohmann::json datasheet = {{"peak_tflops", nullptr}, {"device", nullptr}, {"source", nullptr},
                              {"mfu_pct", nullptr}};
  if (c.peak_tflops) {
    datasheet = {{"peak_tflops", *c.peak_tflops}, {"device", dev_name},
                 {"source", "--peak-tflops override"},
                 {"mfu_pct", mfu_pct(tokens_per_s, fpt, *c.peak_tflops)}};
  } else if (auto peak = datasheet_peak(dev_name, precision)) {
    datasheet = {{"peak_tflops", peak->tflops}, {"device", peak->device}, {"source", peak->source},
                 {"mfu_pct", mfu_pct(tokens_per_s, fpt, peak->tflops)}};
  }
  return {{"precision", precision_name(precision)},
          {"tokens_per_s_basis", tokens_basis},
          {"datasheet", datasheet},
          {"measured_roofline",
           {{"peak_tflops", roof.tflops},
            {"probe", roof},
            {"source", roof_source},
            {"mfu_pct", mfu_pct(tokens_per_s, fpt, roof.tflops)}}}};
}

namespace {

// `graph`: the step replays a CUDA graph, whose activations live in the
// graph's private pool. Replays allocate nothing, so the allocator's
// allocated/active peaks leave them out; reserved bytes include the pool.
nlohmann::json memory_section(const torch::Device& device, const MemoryStats& m,
                              const MemoryEstimate& estimate, bool graph, const nlohmann::json& cpu_allocator) {
  const bool cuda = device.is_cuda();
  const int64_t peak = cuda ? m.peak_reserved_bytes : m.peak_rss_bytes;
  auto cuda_only = [&](int64_t v) { return cuda ? nlohmann::json(v) : nlohmann::json(); };
  auto pool_blind = [&](int64_t v) { return cuda && !graph ? nlohmann::json(v) : nlohmann::json(); };
  auto pct = [&](int64_t v) { return 100.0 * double(v) / double(m.device_total_bytes); };
  nlohmann::json measured = {
      {"peak_allocated_bytes", pool_blind(m.peak_allocated_bytes)},
      {"peak_reserved_bytes", cuda_only(m.peak_reserved_bytes)},
      {"peak_active_bytes", pool_blind(m.peak_active_bytes)},
      {"allocated_active_valid", cuda && !graph},
      {"allocated_active_note",
       graph ? "null: a CUDA-graph replay allocates nothing, so allocated/active peaks (here and in steps.peak_*) "
               "leave out the activations in the graph's private pool; peak_reserved_bytes includes it"
             : cuda ? "" : "CPU: no caching allocator; see peak_rss_bytes"},
      {"alloc_retries", m.alloc_retries},
      {"ooms", m.ooms},
      {"peak_rss_bytes", m.peak_rss_bytes},
      {"peak_rss_window",
       m.peak_rss_reset ? "measured steps (VmHWM reset at start)" : "process lifetime"},
      {"device_total_bytes", m.device_total_bytes},
      {"peak_bytes", peak},
      {"peak_kind", cuda ? "cuda_peak_reserved" : "cpu_peak_rss"},
      {"peak_pct_of_device", pct(peak)},
      {"peak_active_pct_of_device", cuda && !graph ? nlohmann::json(pct(m.peak_active_bytes)) : nlohmann::json()},
      {"peak_reserved_pct_of_device", cuda ? nlohmann::json(pct(m.peak_reserved_bytes)) : nlohmann::json()},
      {"monitor", "torchtitan-style: CUDA cache emptied before the warmup steps, peaks and counters reset "
                  "when measurement starts; peaks reset before every measured step and read after it "
                  "(steps.peak_*)"},
  };
  return {{"measured", measured}, {"estimate", estimate}, {"cpu_allocator", cpu_allocator}};
}

// Test-only fault injection for the ddp rung: LADDER_TEST_FAULT=kill:R:S
// (rank R sends itself SIGKILL after step S) or hang:R:S (SIGSTOP: a hung
// rank). The fault tests check that the other ranks fail within the timeout.
struct FaultHook {
  std::string action;
  int64_t step = -1;
  void after_step(int64_t s) const {
    if (action.empty() || s != step) return;
    fmt::print(stderr, "{} set: {} this rank after step {} (test hook)\n", kFaultHookEnv, action, s);
    std::fflush(stderr);
    std::raise(action == "kill" ? SIGKILL : SIGSTOP);
  }
};

FaultHook read_fault_hook(int rank) {
  const char* v = std::getenv(kFaultHookEnv);
  if (!v) return {};
  char action[16] = {0};
  int r = -1;
  long long s = -1;
  if (std::sscanf(v, "%15[a-z]:%d:%lld", action, &r, &s) != 3 ||
      (std::string(action) != "kill" && std::string(action) != "hang"))
    throw ConfigError(fmt::format("{}='{}': expected kill:RANK:STEP or hang:RANK:STEP", kFaultHookEnv, v));
  if (r != rank) return {};
  return {action, s};
}

// One rank's figures for rank 0's report: per-step arrays and medians.
nlohmann::json rank_figures(const RunConfig& c, const HarnessResult& r) {
  nlohmann::json cols = steps_to_json(r.steps, MetricContext{c.world_size});
  nlohmann::json j = {{"rank", c.rank}, {"local_rank", c.local_rank}, {"host", host_name()},
                      {"peak_rss_bytes", r.memory.peak_rss_bytes},
                      {"peak_reserved_bytes", r.memory.peak_reserved_bytes}};
  // Per device: this rank's own tokens over its own step times.
  std::vector<double> own_tok_s;
  for (const auto& s : r.steps) own_tok_s.push_back(double(s.tokens / c.world_size) / (s.dt_ms * 1e-3));
  j["tokens_per_s_per_device"] = own_tok_s;
  for (const char* key : {"dt_ms", "allreduce_ms", "allreduce_exposed_ms", "allreduce_overlap_pct",
                          "allreduce_pct_of_dt"})
    if (cols.contains(key)) j[key] = cols[key];
  nlohmann::json med;
  for (auto& [key, v] : j.items())
    if (v.is_array()) med[key] = summarize(v.get<std::vector<double>>()).median;
  j["median"] = med;
  return j;
}

// The ddp section of rank 0's report: every rank's figures and their spread.
nlohmann::json ddp_section(const RunConfig& c, const LaunchEnv& env, ProcessGroup& pg,
                           const HarnessResult& r) {
  nlohmann::json mine = rank_figures(c, r);
  if (c.rank != 0) {
    pg.set(fmt::format("figures/{}", c.rank), mine.dump());
    return nullptr;
  }
  nlohmann::json ranks = nlohmann::json::array({mine});
  for (int k = 1; k < c.world_size; ++k) ranks.push_back(nlohmann::json::parse(pg.get(fmt::format("figures/{}", k))));
  nlohmann::json agg;
  for (const char* key : {"dt_ms", "tokens_per_s_per_device", "allreduce_ms", "allreduce_pct_of_dt",
                          "allreduce_overlap_pct"}) {
    std::vector<double> medians;
    for (const auto& rk : ranks)
      if (rk["median"].contains(key)) medians.push_back(rk["median"][key].get<double>());
    if (!medians.empty()) agg[key] = summarize(medians);
  }
  return {{"world_size", c.world_size},
          {"backend", pg.backend_name()},
          {"launcher", env.launcher},
          {"master", pg.master()},
          {"timeouts_s", {{"first_step", c.ddp.first_timeout_s}, {"steady", c.ddp.timeout_s},
                          {"connect", c.ddp.connect_timeout_s}}},
          {"data_sharding", "rank r of W reads rows ((step*micro_steps + micro)*W + r)*B .. +B of the stream"},
          {"comm_timing", pg.backend_name() == "gloo"
                              ? "host clock at launch and at the work's completion callback"
                              : "device: allreduce_ms sums each bucket's NCCL work duration (its start and end "
                                "CUDA events); exposed is the compute stream's wait from backward's end to after "
                                "the last bucket (CUDA events)"},
          {"per_rank", ranks},
          {"across_ranks_of_medians", agg}};
}

}  // namespace

nlohmann::json measure_rung(RunConfig c, const MeasureOptions& o) {
  const std::string started_at = utc_now_iso8601();
  const torch::Device device = parse_device(c.device);
  // LibTorch may default to one intra-op thread on a VM: set it explicitly.
  // Ranks on one machine share its cores.
  // With no --threads the ranks of a CPU job split the host's cores, and
  // MFU is per host (the run roofline used all of them); with --threads T
  // each rank is a T-thread device of its own.
  const bool ranks_share_cpu = device.is_cpu() && c.threads == 0;
  if (c.threads == 0)
    c.threads = int(std::max(1u, std::thread::hardware_concurrency() / unsigned(std::max(1, c.local_world_size))));
  at::set_num_threads(c.threads);
  // Before the model exists: its tensors and every step's come from the heap.
  const nlohmann::json cpu_allocator = device.is_cpu() ? keep_cpu_memory_in_process() : nlohmann::json();
  Position position;
  try {
    std::unique_ptr<ProcessGroup> pg;
    if (c.sw.on("ddp")) {
      position.phase = "rendezvous";
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
      pg = ProcessGroup::create(d);
      position.phase = "setup";
    }
    // Built first: a bad --profile schedule stops here, with exit code 2.
    std::unique_ptr<profiler::TraceProfiler> tracer;
    if (!c.profile.empty()) {
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
        t.barrier = [p = pg.get()] { p->barrier(); };
      }
      tracer = std::make_unique<profiler::TraceProfiler>(std::move(t));
    }
    position.phase = "bf16 probe";
    resolve_cpu_bf16(c, o.roofline_file.empty() ? nlohmann::json() : read_json_file(o.roofline_file), device);
    position.phase = "setup";
    TrainStep step(c, device, make_token_source(c, device), pg.get());
    if (!o.save_init.empty()) save_weights(step.model(), o.save_init);
    if (!o.save_grads.empty()) step.keep_gradients_of_step(0);
    if (const char* crash = std::getenv(kCrashHookEnv); crash && c.rung == crash) {
      fmt::print(stderr, "[{}] {} set: aborting on purpose (test hook)\n", c.rung, kCrashHookEnv);
      std::fflush(stderr);
      std::abort();
    }
    const int64_t n_params = step.model()->num_params();
    const int64_t n_params_no_wpe = step.model()->num_params(/*exclude_position_embeddings=*/true);
    const int64_t fpt = flops_per_token(c.model, n_params_no_wpe, c.seq);

    // One progress line per job: rank 0's.
    Progress progress(o.label.empty() ? c.rung : o.label, c.warmup, c.steps, o.quiet || c.rank != 0);
    const FaultHook fault = read_fault_hook(c.rank);
    HarnessResult result = run_measurement(
        step, c, device,
        [&](const StepRecord& rec, bool warmup) {
          progress.update(rec, warmup);
          fault.after_step(rec.step);
        },
        &position, tracer.get());
    if (tracer) tracer->finish(result.next_step - 1);
    progress.finish();
    // What the warmup and measured steps consumed, before the op breakdown's
    // extra steps (one on CPU, two on CUDA) read more.
    const nlohmann::json data = step.data().describe();
    // After the run: the gradient sync's event order is known by now.
    const nlohmann::json switches = step.describe_switches();
    if (!o.save_final.empty() && c.rank == 0) save_weights(step.model(), o.save_final);
    if (!o.save_grads.empty() && c.rank == 0) save_named(step.kept_gradients(), o.save_grads);
    nlohmann::json op_counts, op_breakdown;
    if (o.count_ops && profiler::compiled_in()) {
      position.phase = "op breakdown";
      OpProfile ops = profile_ops(step, device, result.next_step);
      op_counts = std::move(ops.op_counts);
      op_breakdown = std::move(ops.op_breakdown);
    }
    const nlohmann::json ddp = pg ? ddp_section(c, o.launch, *pg, result) : nlohmann::json();
    if (c.rank != 0) return nullptr;  // rank 0 writes the job's report
    // A NaN or inf loss or gradient norm fails the rung, the baseline too:
    // its figures would time a diverged run (checked after the op breakdown,
    // whose extra steps every rank of a ddp job must run together).
    for (const auto* steps : {&result.warmup_steps, &result.steps})
      for (const auto& s : *steps)
        if (!std::isfinite(s.loss) || !std::isfinite(s.grad_norm)) {
          position.step = s.step;
          position.phase = "step";
          throw Diverged(fmt::format("the run diverged at step {}: loss {}, gradient norm {}", s.step, s.loss,
                                     s.grad_norm));
        }
    const Precision precision = mfu_precision(c, switches);
    const Switches numerics = numerics_in_effect(c.sw, switches);  // the parity class's
    // The run's roofline (one denominator for every rung), or this process's own probe.
    RooflineResult roof;
    nlohmann::json roof_source;
    if (!o.roofline_file.empty()) {
      roof = run_roofline_entry(read_json_file(o.roofline_file), precision, device_name(device), o.roofline_file);
      roof_source = {{"measured", "once for the run, before the rungs"}, {"file", o.roofline_file}};
    } else {
      roof = probe_matmul(device, precision);
      roof_source = {{"measured", "by this process, after its steps"}, {"file", nullptr}};
    }

    const int world = c.world_size;
    const MetricContext metrics{world, fpt};
    nlohmann::json summary = summarize_steps(result.steps, metrics);
    // MFU is per device: a GPU, or a host's whole CPU, which the ranks of a
    // CPU ddp job share (and the run roofline measured with all its cores).
    const int devices = ranks_share_cpu ? std::max(1, world / std::max(1, c.local_world_size)) : world;
    const double tok_s = summary["tokens_per_s"]["median"].get<double>() / devices;
    const std::string tokens_basis =
        devices == world ? "median tokens_per_s_per_device"
                         : fmt::format("median tokens_per_s / {} host(s): the {} ranks on a host share its CPU",
                                       devices, c.local_world_size);
    const double dt_median = summary["dt_ms"]["median"].get<double>();
    double sum_dt = 0, sum_data = 0;
    for (const auto& s : result.steps) {
      sum_dt += s.dt_ms;
      sum_data += s.data_ms;
    }
    std::vector<double> mfu_steps;
    for (const auto& s : result.steps) mfu_steps.push_back(mfu_pct(s.tokens_per_s / devices, fpt, roof.tflops));
    summary["mfu_pct_measured_roofline"] = summarize(mfu_steps);

    nlohmann::json report = rung_report_header(c, o.run_id, o.argv, started_at);
    report.update({
        {"status", "ok"},
        {"finished_at", utc_now_iso8601()},
        {"environment", describe_environment(device)},
        {"world_size", world},
        {"switches", switches},
        {"parity", {{"status", "pending"}, {"class", parity_class(numerics)}, {"rtol", parity_rtol(numerics)}}},
        {"data", data},
        {"model", {{"n_params", n_params}, {"n_params_without_wpe", n_params_no_wpe},
                   {"vocab_size", c.model.vocab_size}, {"model_vocab", c.model_vocab()}}},
        {"timing", {{"mode", result.timing_mode}, {"timer", result.timer_method},
                    {"warmup_steps_excluded", int64_t(result.warmup_steps.size())}, {"measured_steps", c.steps},
                    {"warmup", {{"min", c.warmup}, {"max", c.warmup_until_stable() ? c.warmup_max : c.warmup},
                                {"window", kWarmupWindow}, {"tolerance_pct", c.warmup_tolerance_pct},
                                {"steps_run", int64_t(result.warmup_steps.size())},
                                {"stopped", result.warmup_stopped},
                                {"rule", "after min steps, warm up until the last `window` steps' dt lie within "
                                         "tolerance_pct of their minimum, at most max steps"}}},
                    {"measured_wall_ms", result.measured_wall_ms},
                    {"test_slowdown_pct", result.test_slowdown_pct > 0 ? nlohmann::json(result.test_slowdown_pct)
                                                                        : nlohmann::json()},
                    {"host_steal_ms", result.host_steal_ms >= 0 ? nlohmann::json(result.host_steal_ms)
                                                                : nlohmann::json()},
                    {"host_steal_pct_of_wall",
                     result.host_steal_ms >= 0
                         ? nlohmann::json(100.0 * result.host_steal_ms /
                                          (result.measured_wall_ms * double(std::thread::hardware_concurrency())))
                         : nlohmann::json()},
                    {"harness_overhead_ms_per_step", result.harness_overhead_ms_per_step},
                    {"harness_overhead_pct_of_dt", 100.0 * result.harness_overhead_ms_per_step / dt_median},
                    {"data_ms_per_step", sum_data / double(result.steps.size())},
                    {"data_pct_of_dt", 100.0 * sum_data / sum_dt},
                    {"data_time", "host wall time of the data phase (waiting for the batch, issuing its "
                                  "copy to the device), not synchronised; steps.data_ms per step"}}},
        {"flops", {{"flops_per_token", fpt}, {"formula", kFlopsFormula},
                   {"flops_per_step", double(fpt) * double(c.tokens_per_step())}}},
        {"throughput", {{"tokens_per_step", c.tokens_per_step()},
                        {"tokens_per_micro_step", c.tokens_per_micro_step()},
                        {"micro_steps", c.micro_steps()},
                        {"tokens_per_s_aggregate", summary["tokens_per_s"]["median"]},
                        {"tokens_per_s_per_device", tok_s}}},
        {"mfu", mfu_section(c, precision, device_name(device), tok_s, tokens_basis, fpt, roof, roof_source)},
        {"memory", memory_section(device, result.memory, estimate_memory(c.model, n_params, c.batch, c.seq),
                                  /*graph=*/step.uses_graph(), cpu_allocator)},
        {"op_counts", op_counts},
        {"ddp", ddp},
        {"op_breakdown", op_breakdown},
        {"profile", tracer ? tracer->to_json() : nlohmann::json()},
        {"steps", steps_to_json(result.steps, metrics)},
        {"warmup_steps", steps_to_json(result.warmup_steps, metrics)},
        {"summary", summary},
    });
    write_report(o.report_path, report);
    return report;
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    if (c.rank != 0) throw;  // rank 0 reports for the job
    const bool oom = dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr;
    const bool diverged = dynamic_cast<const Diverged*>(&e) != nullptr;
    nlohmann::json report = rung_report_header(c, o.run_id, o.argv, started_at);
    report.update({{"status", oom ? "oom" : diverged ? "diverged" : "failed"},
                   {"finished_at", utc_now_iso8601()},
                   {"failure", {{"reason", oom ? "out of memory" : diverged ? "diverged" : "exception"},
                                {"message", std::string(e.what()).substr(0, 2000)},
                                {"step", position.step},
                                {"phase", position.phase},
                                {"rank", c.rank}}}});
    write_report(o.report_path, report);
    throw;
  }
}

}  // namespace ladder
