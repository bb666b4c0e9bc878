// profiler/trace/trace_profiler.cpp: see trace_profiler.h.
#include "profiler/trace/trace_profiler.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include <ATen/record_function.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/profiler_kineto.h>

#include "profiler/common/atomic_file.h"
#include "profiler/common/config_error.h"
#include "profiler/trace/kineto_session.h"
#include "profiler/ranges/range.h"

namespace ladder::profiler {

namespace fs = std::filesystem;

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
// The host time per phase of each recorded step (its ProfilerStep#N
// range), in step order: what a reader of the trace file computes from its
// ranges (HTA's user-annotation breakdown, tests/e2e/e2e_profile.py).
std::vector<PhasesMs> phases_of(const torch::autograd::profiler::ProfilerResult& result) {
  std::vector<PhasesMs> out;
  for (const Breakdown& b : step_host_breakdowns(result)) out.push_back(b.phases);
  return out;
}
}  // namespace

std::string distributed_info_json(int rank, int world_size, const std::string& backend) {
  std::string out = "{";
  if (!backend.empty()) out += fmt::format("\"backend\": {}, ", nlohmann::json(backend).dump());
  return out + fmt::format("\"rank\": {}, \"world_size\": {}}}", rank, world_size);
}

std::string trace_path(const std::string& dir, int rank, int64_t step) {
  return (fs::path(dir) / fmt::format("rank{}_step{}.json", rank, step)).string();
}

TraceProfiler::TraceProfiler(TraceOptions options) : options_(std::move(options)) {
  if (!compiled_in())
    throw ConfigError("--profile: this build has the profiler compiled out (configured with "
                      "-DLADDER_WITH_PROFILER=OFF); reconfigure with -DLADDER_WITH_PROFILER=ON");
  schedule_ = parse_schedule(options_.schedule, options_.total_steps);
  if (options_.rank < 0 || options_.rank >= options_.world_size)
    throw ConfigError(fmt::format("--profile: rank {} is outside the world of {} rank(s)", options_.rank,
                                  options_.world_size));
  if (schedule_.warmup == 0 && !options_.quiet)
    fmt::print(stderr, "ladder: warning: --profile {}: no profiler warmup; the first recorded step "
                       "includes the profiler's start-up cost\n", options_.schedule);
  ensure_writable_dir(options_.dir, "--profile (trace directory)");
}

TraceProfiler::~TraceProfiler() = default;

void TraceProfiler::before_step(int64_t step) {
  const ProfilerAction action = schedule_.action(step);
  if (action == ProfilerAction::kNone) return;
  if (!session_)
    session_ = std::make_unique<KinetoSession>(
        KinetoOptions{options_.cuda, /*record_shapes=*/true, /*profile_memory=*/true});
  if (action == ProfilerAction::kWarmup || session_->recording()) return;
  session_->start();
  first_recorded_ = step;
  // What torch.profiler's start_trace adds, so trace tools see the same keys,
  // written as its json.dumps writes them: HTA finds a trace's rank with the
  // regex "rank":\s+(\d+), which needs the space after the colon.
  session_->add_metadata_json("distributedInfo",
                              distributed_info_json(options_.rank, options_.world_size, options_.backend));
  session_->add_metadata_json("record_shapes", "1");
  session_->add_metadata_json("profile_memory", "1");
}

void TraceProfiler::step_begins(int64_t step) {
  if (!session_ || !session_->recording()) return;
  marker_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (marker_->isActive()) marker_->before(names::profiler_step(step));
}

void TraceProfiler::step_ends(int64_t step) {
  if (!marker_) return;
  marker_.reset();  // ends ProfilerStep#step
  recorded_steps_.push_back(step);
}

void TraceProfiler::after_step(int64_t step) {
  if (schedule_.action(step) == ProfilerAction::kRecordAndSave && session_ && session_->recording())
    write_trace(step);
}

void TraceProfiler::finish(int64_t last_step) {
  marker_.reset();
  if (session_ && session_->recording()) write_trace(last_step);
  session_.reset();
}

void TraceProfiler::write_trace(int64_t last_step) {
  TraceRecord rec;
  rec.first_step = first_recorded_;
  rec.last_step = last_step;
  rec.path = trace_path(options_.dir, options_.rank, last_step);
  const auto t0 = Clock::now();
  std::unique_ptr<torch::autograd::profiler::ProfilerResult> result = session_->stop();
  session_.reset();
  rec.stop_ms = ms_since(t0);
  rec.phases_ms = phases_of(*result);
  const auto t1 = Clock::now();
  const std::string tmp = fmt::format("{}.tmp.{}", rec.path, getpid());
  result->save(tmp);
  result.reset();
  commit_file_atomically(tmp, rec.path);
  rec.dump_ms = ms_since(t1);
  std::error_code ec;
  rec.bytes = int64_t(fs::file_size(rec.path, ec));
  if (options_.barrier) {
    const auto t2 = Clock::now();
    options_.barrier();
    rec.barrier_ms = ms_since(t2);
  }
  if (!options_.quiet)
    fmt::print(stderr, "ladder: rank {}: trace of steps {}..{} written to {} ({:.1f} MB; stop {:.0f} ms, "
                       "dump {:.0f} ms)\n",
               options_.rank, rec.first_step, rec.last_step, rec.path, double(rec.bytes) / 1e6, rec.stop_ms,
               rec.dump_ms);
  traces_.push_back(rec);
}

ProfileSection TraceProfiler::section() const {
  ProfileSection p;
  p.spec = options_.schedule;
  p.schedule = schedule_;
  p.activities = options_.cuda ? std::vector<std::string>{"cpu", "cuda"} : std::vector<std::string>{"cpu"};
  p.record_shapes = true;
  p.profile_memory = true;
  p.rank = options_.rank;
  p.world_size = options_.world_size;
  p.trace_dir = options_.dir;
  p.recorded_steps = recorded_steps_;
  p.traces = traces_;
  double dump_total = 0, stop_total = 0;
  for (const auto& t : traces_) {
    dump_total += t.dump_ms;
    stop_total += t.stop_ms;
  }
  p.stop_ms_total = stop_total;
  p.dump_ms_total = dump_total;
  return p;
}

}  // namespace ladder::profiler
