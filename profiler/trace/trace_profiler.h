// profiler/trace/trace_profiler.h: per-rank Kineto traces on a schedule, as
// torchtitan's profiler does.
//
// A scoped object over LibTorch's Kineto profiler (kineto_session.h): CPU
// activities, plus CUDA on a CUDA device; input shapes and memory events
// recorded. `--profile wait,warmup,active[,repeat]` (profiler/trace/schedule.h) is
// validated when the object is built: a bad schedule throws ConfigError
// (exit code 2). Each recorded step is wrapped in "ProfilerStep#<step>" and
// every trace carries top-level "distributedInfo" {backend, rank,
// world_size}, so Holistic Trace Analysis reads it without edits; Perfetto
// and chrome://tracing open it as it is.
//
// Traces go to fixed paths, <run>/<rung>/traces/rank<r>_step<s>.json (s: the
// last step of the cycle), written atomically (temp file, fsync, rename).
// The time to stop the profiler and to write each trace is measured and
// reported; after each trace every rank waits at `barrier` (set by the
// data-parallel code to its process group's barrier; empty with one rank),
// so a slow dump on one rank does not skew the next steps of the others.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "profiler/trace/breakdown_section.h"
#include "profiler/trace/schedule.h"

namespace at {
class RecordFunction;
}

namespace ladder::profiler {

class KinetoSession;

struct TraceOptions {
  std::string schedule;     // "wait,warmup,active[,repeat]"
  int64_t total_steps = 0;  // steps the run makes, warmup included
  std::string dir;          // <run>/<rung>/traces
  int rank = 0;
  int world_size = 1;
  bool cuda = false;        // add CUDA activities
  std::string backend;      // process-group backend for distributedInfo; "" for none
  std::function<void()> barrier;  // across ranks, after each trace; empty: none
  bool quiet = false;       // no line on stderr per trace
};

struct TraceRecord {
  std::string path;
  int64_t first_step = 0, last_step = 0;  // the recorded steps
  double stop_ms = 0;     // disableProfiler: collection and event post-processing
  double dump_ms = 0;     // writing the JSON and renaming it into place
  double barrier_ms = 0;  // waiting for the other ranks
  int64_t bytes = 0;
  ::ladder::fields::Maybe<std::vector<PhasesMs>> phases_ms;  // each recorded step's, from the trace's ranges

  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("path", s.path);
    v("first_step", s.first_step, Doc().min(0));
    v("last_step", s.last_step, Doc().min(0));
    v("stop_ms", s.stop_ms, Doc("disableProfiler: collection and event post-processing").min(0));
    v("dump_ms", s.dump_ms, Doc("writing the trace JSON and renaming it into place").min(0));
    v("barrier_ms", s.barrier_ms, Doc("waiting for the other ranks after the dump").min(0));
    v("bytes", s.bytes, Doc().min(0));
    v("phases_ms", s.phases_ms,
      "each recorded step's host ms per phase, in step order, from the operators inside the phase ranges of its "
      "ProfilerStep#N range in this trace (as op_breakdown.phases_ms)");
  }
};

// The report's profile section: the schedule, what was recorded, and each
// trace's file and cost.
struct ProfileSection {
  std::string spec, trace_dir;
  ProfileSchedule schedule;
  ::ladder::fields::Maybe<std::vector<std::string>> activities;  // absent in reports from before it was recorded
  ::ladder::fields::Maybe<bool> record_shapes, profile_memory;
  int64_t rank = 0, world_size = 1;
  std::vector<int64_t> recorded_steps;
  std::vector<TraceRecord> traces;
  ::ladder::fields::Maybe<double> stop_ms_total;
  double dump_ms_total = 0;

  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("spec", s.spec, Doc("--profile: wait,warmup,active[,repeat]"));
    v("schedule", s.schedule);
    v("activities", s.activities, Doc().one_of({"cpu", "cuda"}));
    v("record_shapes", s.record_shapes);
    v("profile_memory", s.profile_memory);
    v("rank", s.rank, Doc().min(0));
    v("world_size", s.world_size, Doc().min(1));
    v("trace_dir", s.trace_dir);
    v("recorded_steps", s.recorded_steps, Doc().min(0));
    v("traces", s.traces);
    v("stop_ms_total", s.stop_ms_total, Doc().min(0));
    v("dump_ms_total", s.dump_ms_total, Doc().min(0));
  }
  static void schema_extra(nlohmann::json& schema) {
    schema["description"] = "--profile: the Kineto traces of this rank (profiler/trace/trace_profiler.h); null without --profile";
  }
};

// The trace's distributedInfo as torch.profiler writes it (Python's
// json.dumps): {"backend": "gloo", "rank": 0, "world_size": 2}.
std::string distributed_info_json(int rank, int world_size, const std::string& backend);

// <dir>/rank<rank>_step<step>.json
std::string trace_path(const std::string& dir, int rank, int64_t step);

class TraceProfiler final {
 public:
  // Throws ConfigError for a bad schedule, an unwritable directory, or a
  // build with the profiler compiled out.
  explicit TraceProfiler(TraceOptions options);
  ~TraceProfiler();
  TraceProfiler(const TraceProfiler&) = delete;
  TraceProfiler& operator=(const TraceProfiler&) = delete;

  // Around every step the harness runs (its observer list calls these,
  // bench/measure/measure.cpp). Only step_begins and step_ends run inside the timed
  // region, and they only open and close the step's range; starting,
  // stopping and writing a trace happen in before_step and after_step.
  void before_step(int64_t step);
  void step_begins(int64_t step);
  void step_ends(int64_t step);
  void after_step(int64_t step);
  // Writes a cycle the end of the run cut short (as torch.profiler does on
  // exit) and drops a warmup that never recorded. Called after the last step.
  void finish(int64_t last_step);

  const ProfileSchedule& schedule() const { return schedule_; }
  const std::vector<TraceRecord>& traces() const { return traces_; }
  // The report's profile section.
  ProfileSection section() const;

 private:
  void write_trace(int64_t last_step);

  TraceOptions options_;
  ProfileSchedule schedule_;
  std::unique_ptr<KinetoSession> session_;
  std::unique_ptr<at::RecordFunction> marker_;  // ProfilerStep#N of the step running
  int64_t first_recorded_ = -1;
  std::vector<int64_t> recorded_steps_;
  std::vector<TraceRecord> traces_;
};

}  // namespace ladder::profiler
