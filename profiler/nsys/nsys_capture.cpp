// profiler/nsys/nsys_capture.cpp: see nsys_capture.h.
#include "profiler/nsys/nsys_capture.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "profiler/common/config_error.h"
#include "profiler/ranges/range.h"

namespace ladder::profiler {

namespace {

using Phase = DeviceEvent::Phase;

constexpr const char* kStepRangePrefix = "step ";

// The ranges of one thread, outer ones first, to find those open at a time.
struct ThreadRanges {
  std::vector<const CaptureRange*> ranges;  // by start, the longer first
  // The innermost phase and layer ranges open at `t`; kUnknown / "" for none.
  std::pair<Phase, std::string> at(int64_t t) const {
    Phase phase = Phase::kUnknown;
    std::string layer;
    int64_t phase_start = INT64_MIN, layer_start = INT64_MIN;
    for (const CaptureRange* r : ranges) {
      if (r->start_ns > t) break;
      if (r->end_ns < t) continue;
      const Phase p = phase_of_range_name(r->name);
      // The innermost: the one that started last (ranges of a thread nest).
      if (p != Phase::kUnknown && r->start_ns >= phase_start) phase = p, phase_start = r->start_ns;
      if (is_layer_range_name(r->name) && r->start_ns >= layer_start) layer = r->name, layer_start = r->start_ns;
    }
    return {phase, layer};
  }
};

// A process's ranges indexed: its steps in order, and each thread's ranges.
struct Timeline {
  std::vector<const CaptureRange*> steps;
  std::map<int64_t, ThreadRanges> threads;
  int64_t graph_replayed = 0;

  explicit Timeline(const Capture& capture) {
    for (const CaptureRange& r : capture.ranges) {
      if (r.end_ns < r.start_ns) continue;
      if (r.name.rfind(kStepRangePrefix, 0) == 0) steps.push_back(&r);
      threads[r.tid].ranges.push_back(&r);
    }
    auto outer_first = [](const CaptureRange* a, const CaptureRange* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    };
    for (auto& [tid, t] : threads) std::sort(t.ranges.begin(), t.ranges.end(), outer_first);
    std::sort(steps.begin(), steps.end(), outer_first);
  }

  // The step whose range holds `t`, or steps.size().
  size_t step_at(int64_t t) const {
    auto it = std::find_if(steps.begin(), steps.end(),
                           [&](const CaptureRange* s) { return s->start_ns <= t && t <= s->end_ns; });
    return size_t(it - steps.begin());
  }

  // The activity as the breakdown reads it, its phase and layer those open
  // where and when it was launched.
  DeviceEvent attributed(const CaptureActivity& a) {
    DeviceEvent e;
    e.name = a.name;
    e.kind = a.kind;
    e.start_ns = a.start_ns;
    e.end_ns = a.end_ns;
    e.phase = Phase::kOutside;
    if (a.launch_tid != 0) {
      const ThreadRanges& own = threads[a.launch_tid];
      auto [phase, layer] = own.at(a.launch_ns);
      // A thread with no phase open (the autograd thread): the phase open elsewhere in the process.
      if (phase == Phase::kUnknown)
        for (const auto& [tid, t] : threads)
          if (tid != a.launch_tid && (phase = t.at(a.launch_ns).first) != Phase::kUnknown) break;
      if (phase != Phase::kUnknown) e.phase = phase;
      e.layer = layer;
      graph_replayed += std::any_of(own.ranges.begin(), own.ranges.end(), [&](const CaptureRange* r) {
        return r->start_ns <= a.launch_ns && a.launch_ns <= r->end_ns &&
               (r->name == names::kForwardBackwardGraph || r->name == names::kStepGraph);
      });
    }
    e.in_optimizer = e.phase == Phase::kOptimizer;
    return e;
  }
};

}  // namespace

ImportedCapture import_capture(const Capture& capture, const std::string& what) {
  ImportedCapture out;
  Timeline timeline(capture);
  const auto& steps = timeline.steps;
  if (steps.empty())
    throw ConfigError(fmt::format("{}: no NVTX range 'step <rung>' in process {}; expected a capture of ladder's "
                                  "steps with NVTX traced (scripts/nsys: nsys profile --trace=cuda,nvtx)",
                                  what, capture.pid));
  out.rung = steps.front()->name.substr(std::string(kStepRangePrefix).size());
  // Each activity to the step that holds its launch (or its start, with no launch record).
  std::vector<std::vector<DeviceEvent>> per_step(steps.size());
  int64_t unlaunched = 0, outside_steps = 0;
  for (const CaptureActivity& a : capture.activities) {
    unlaunched += a.launch_tid == 0;
    const size_t step = timeline.step_at(a.launch_tid != 0 ? a.launch_ns : a.start_ns);
    if (step == steps.size()) ++outside_steps;
    else per_step[step].push_back(timeline.attributed(a));
  }
  Breakdown total;
  int64_t counted = 0;
  double host_ms = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& acts = per_step[i];
    if (acts.empty()) continue;
    int64_t begin = INT64_MAX, end = INT64_MIN;
    for (const DeviceEvent& e : acts) begin = std::min(begin, e.start_ns), end = std::max(end, e.end_ns);
    total += device_breakdown(acts, begin, end);
    host_ms += double(steps[i]->end_ns - steps[i]->start_ns) * 1e-6;
    ++counted;
  }
  if (counted == 0)
    throw ConfigError(fmt::format("{}: process {} has {} step ranges and no kernel, memcpy or memset launched in "
                                  "them; expected a capture with CUDA traced (nsys profile --trace=cuda,nvtx)",
                                  what, capture.pid, steps.size()));
  out.section = breakdown_section(fmt::format("nsys: CUDA kernels of {} (process {})", what, capture.pid), total,
                                  counted, host_ms / double(counted));
  out.section.kernel_launches_per_step = double(total.kernels) / double(counted);
  out.section.memcpy_memset_per_step = double(total.memcpy_memset) / double(counted);
  out.notes.push_back(fmt::format("{} steps ('step {}' ranges), each the device's span from its first activity to its "
                                  "last; dt is the step range's host time",
                                  counted, out.rung));
  if (timeline.graph_replayed > 0)
    out.notes.push_back(fmt::format("{} activities replayed from CUDA graphs count in the replay's range, not in a "
                                    "phase (a graph replays without host code, so it has no phase ranges inside)",
                                    timeline.graph_replayed));
  if (unlaunched > 0)
    out.notes.push_back(fmt::format("{} activities had no CUDA runtime record (traced without cuda?): placed by their "
                                    "own start, in no phase",
                                    unlaunched));
  if (outside_steps > 0)
    out.notes.push_back(fmt::format("{} activities launched outside every step range are left out", outside_steps));
  return out;
}

}  // namespace ladder::profiler
