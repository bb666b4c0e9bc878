// profiler/trace/trace_breakdown.cpp: a Kineto Chrome trace -> the op breakdown
// (see trace_breakdown.h).
#include "profiler/trace/trace_breakdown.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ladder::profiler {

namespace {

using nlohmann::json;

constexpr const char* kStepPrefix = "ProfilerStep#";

// A complete ("X") event of the trace, its times in ns.
struct Event {
  const json* e;
  std::string cat;
  int64_t start_ns, end_ns;
};

int64_t to_ns(const json& us) { return std::llround(us.get<double>() * 1000.0); }

// The key of the thread an event ran on: Kineto writes pid and tid as
// numbers or strings.
std::string thread_of(const json& e) { return e.value("pid", json()).dump() + "/" + e.value("tid", json()).dump(); }

// An integer of an event's args, or -1: "correlation" (a launch and its
// kernel), "Sequence number" (a forward operator and its backward node).
int64_t int_arg(const json& e, const char* key) {
  const auto args = e.find("args");
  if (args == e.end() || !args->is_object()) return -1;
  const auto v = args->find(key);
  return v != args->end() && v->is_number_integer() ? v->get<int64_t>() : -1;
}
int64_t correlation_of(const json& e) { return int_arg(e, "correlation"); }

bool inside(int64_t t, const std::vector<std::pair<int64_t, int64_t>>& spans) {
  return std::any_of(spans.begin(), spans.end(), [&](const auto& s) { return s.first <= t && t <= s.second; });
}

}  // namespace

TraceBreakdown trace_breakdown(const json& trace, bool device) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    throw std::runtime_error("the trace has no traceEvents list (not a Chrome trace from torch.profiler)");
  std::vector<Event> events;
  for (const auto& e : trace["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "X" || !e.contains("ts") || !e["ts"].is_number() ||
        !e.contains("dur") || !e["dur"].is_number() || !e.contains("name") || !e["name"].is_string())
      continue;
    const int64_t start = to_ns(e["ts"]);
    events.push_back({&e, e.value("cat", ""), start, start + to_ns(e["dur"])});
  }

  // The steps, in order, and the thread that ran them.
  std::vector<std::pair<int64_t, int64_t>> steps, optimizer_ranges;
  std::string step_thread;
  for (const auto& ev : events) {
    const std::string& name = (*ev.e)["name"].get_ref<const std::string&>();
    if (ev.cat != "user_annotation") continue;
    if (name.rfind(kStepPrefix, 0) == 0) {
      steps.emplace_back(ev.start_ns, ev.end_ns);
      step_thread = thread_of(*ev.e);
    } else if (name == "optimizer") {
      optimizer_ranges.emplace_back(ev.start_ns, ev.end_ns);
    }
  }
  if (steps.empty())
    throw std::runtime_error(
        "the trace has no ProfilerStep#N range (user_annotation): it was not recorded with torch.profiler's step()");
  std::sort(steps.begin(), steps.end());

  TraceBreakdown out;
  out.steps = int64_t(steps.size());
  std::vector<HostEvent> host;
  std::vector<DeviceEvent> dev;
  std::unordered_map<int64_t, int64_t> launch_ns;  // correlation id -> when the host launched it
  for (const auto& ev : events) {
    const std::string& name = (*ev.e)["name"].get_ref<const std::string&>();
    const bool in_steps = inside(ev.start_ns, steps);
    if (ev.cat == "cpu_op" && in_steps && name.rfind("aten::", 0) == 0) ++out.cpu_ops;
    if (ev.cat == "cuda_runtime" || ev.cat == "cuda_driver") {
      if (const int64_t c = correlation_of(*ev.e); c >= 0) launch_ns[c] = ev.start_ns;
      if (in_steps && name == "cudaGraphLaunch") ++out.graph_launches;
    }
    if (!device && (ev.cat == "cpu_op" || ev.cat == "user_annotation") && thread_of(*ev.e) == step_thread &&
        name.rfind(kStepPrefix, 0) != 0)
      host.push_back({name, ev.start_ns, ev.end_ns, ev.cat == "user_annotation", int_arg(*ev.e, "Sequence number")});
  }
  if (device) {
    for (const auto& ev : events) {
      DeviceEvent d;
      if (ev.cat == "kernel") d.kind = DeviceEvent::Kind::kKernel;
      else if (ev.cat == "gpu_memcpy") d.kind = DeviceEvent::Kind::kMemcpy;
      else if (ev.cat == "gpu_memset") d.kind = DeviceEvent::Kind::kMemset;
      else continue;
      d.name = (*ev.e)["name"].get<std::string>();
      d.start_ns = ev.start_ns;
      d.end_ns = ev.end_ns;
      const auto launched = launch_ns.find(correlation_of(*ev.e));
      d.in_optimizer = launched != launch_ns.end() && inside(launched->second, optimizer_ranges);
      dev.push_back(std::move(d));
    }
  }
  for (const auto& [begin, end] : steps)
    out.total += device ? device_breakdown(dev, begin, end) : host_breakdown(host, begin, end);
  return out;
}

}  // namespace ladder::profiler
