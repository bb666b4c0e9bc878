// profiler/trace/kineto_session.h: one LibTorch Kineto profiling session.
//
// The C++ face of torch.profiler.profile: prepareProfiler (the warmup: CUPTI
// and the CPU collectors start, their events are dropped), enableProfiler
// (recording), disableProfiler (a ProfilerResult whose save() writes the
// Chrome/Kineto trace JSON). CPU activities always, CUDA activities on a CUDA
// device; input shapes and memory events when asked. One session at a time
// per process (Kineto's limit).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profiler/trace/op_categories.h"

namespace torch::autograd::profiler {
struct ProfilerResult;
}

namespace ladder::profiler {

struct KinetoOptions {
  bool cuda = false;            // add CUDA activities (kernels, memcpy, runtime)
  bool record_shapes = false;   // operator input shapes
  bool profile_memory = false;  // allocator events
};

class KinetoSession {
 public:
  // Prepares (warms up) the profiler.
  explicit KinetoSession(const KinetoOptions& options);
  // Stops a session still warming up or recording, dropping its events.
  ~KinetoSession();
  KinetoSession(const KinetoSession&) = delete;
  KinetoSession& operator=(const KinetoSession&) = delete;

  void start();  // record from here
  bool recording() const { return recording_; }
  // Top-level trace metadata (a JSON value, e.g. distributedInfo); only
  // while recording, as torch.profiler's add_metadata_json.
  void add_metadata_json(const std::string& key, const std::string& json_value);
  // Stops and returns what was recorded.
  std::unique_ptr<torch::autograd::profiler::ProfilerResult> stop();

 private:
  KinetoOptions options_;
  bool recording_ = false;
  bool stopped_ = false;
};

// One ProfilerStep#N range of a result, with the thread it ran on.
struct StepSpan {
  int64_t step = 0;
  int64_t begin_ns = 0, end_ns = 0;
  uint64_t thread = 0;
};
std::vector<StepSpan> step_spans(const torch::autograd::profiler::ProfilerResult& result);

// The CPU operators and user ranges of one thread (ProfilerStep# ranges left out).
std::vector<HostEvent> host_events(const torch::autograd::profiler::ProfilerResult& result, uint64_t thread);

// Each ProfilerStep#N range's host breakdown (op_categories.h) over the
// operators of the thread that ran it, in step order: the op breakdown's
// steps (bench/measure/harness/op_breakdown.cpp) and a trace's phases
// (trace_profiler.h) read them alike.
std::vector<Breakdown> step_host_breakdowns(const torch::autograd::profiler::ProfilerResult& result);

}  // namespace ladder::profiler
