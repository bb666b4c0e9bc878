// profiler/trace/device_steps.cpp: see device_steps.h.
#include "profiler/trace/device_steps.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

namespace ladder::profiler {

double ticks_per_ns(const ClockSample& begin, const ClockSample& end) {
  const int64_t dns = end.steady_ns - begin.steady_ns;
  if (dns <= 0) return 1.0;  // no interval to measure: assume CUPTI's nanoseconds
  const double r = double(end.ticks - begin.ticks) / double(dns);
  return std::fabs(r - 1.0) < 1e-3 || !(r > 0) ? 1.0 : r;
}

namespace {

// Each launch's time by its correlation id (the earliest, when a runtime and
// a driver call share one).
std::unordered_map<uint32_t, int64_t> launch_ticks(const std::vector<LaunchRecord>& launches) {
  std::unordered_map<uint32_t, int64_t> at;
  for (const LaunchRecord& l : launches) {
    auto [it, fresh] = at.emplace(l.correlation_id, l.start);
    if (!fresh) it->second = std::min(it->second, l.start);
  }
  return at;
}

// The phase open at `ticks`, or outside every phase.
DeviceEvent::Phase phase_at(const std::vector<DevicePhaseSpan>& phases, int64_t ticks) {
  for (const DevicePhaseSpan& p : phases)
    if (p.begin_ticks <= ticks && ticks <= p.end_ticks) return p.phase;
  return DeviceEvent::Phase::kOutside;
}

// The innermost layer range open at `ticks` (the one opened last), or "".
std::string layer_at(const std::vector<RangeSpan>& layers, int64_t ticks) {
  const RangeSpan* inner = nullptr;
  for (const RangeSpan& l : layers)
    if (l.begin_ticks <= ticks && ticks <= l.end_ticks && (!inner || l.begin_ticks >= inner->begin_ticks)) inner = &l;
  return inner ? inner->name : "";
}

}  // namespace

DeviceSteps analyse_device_steps(const KernelActivityRecords& rec, const std::vector<DeviceStepSpan>& spans,
                                 const std::vector<DevicePhaseSpan>& phases, const std::vector<RangeSpan>& layers) {
  DeviceSteps out;
  out.ticks_per_ns = ticks_per_ns(rec.clock_begin, rec.clock_end);
  const double scale = 1.0 / out.ticks_per_ns;
  // Ticks -> ns on one timebase: offsets from the first sample, rescaled.
  const int64_t origin = rec.clock_begin.ticks;
  auto ns = [&](int64_t ticks) { return int64_t(std::llround(double(ticks - origin) * scale)); };

  const auto launched = launch_ticks(rec.launches);
  using Key = std::tuple<int, uint32_t, uint32_t, int64_t, int64_t>;
  std::set<Key> seen;
  std::vector<DeviceEvent> events;
  events.reserve(rec.records.size());
  for (const auto& r : rec.records) {
    if (!seen.insert({int(r.kind), r.correlation_id, r.stream_id, r.start, r.end}).second) {
      ++out.duplicates_removed;
      continue;
    }
    DeviceEvent e{r.name, ns(r.start), ns(r.end), r.kind, r.in_optimizer};
    if (!phases.empty()) {
      const auto it = launched.find(r.correlation_id);
      if (it == launched.end()) {
        e.phase = DeviceEvent::Phase::kOutside;
        ++out.unlaunched;
      } else {
        e.phase = phase_at(phases, it->second);
        e.layer = layer_at(layers, it->second);
        e.in_optimizer = e.in_optimizer || e.phase == DeviceEvent::Phase::kOptimizer;
      }
    }
    events.push_back(std::move(e));
  }
  for (const auto& s : spans) {
    out.total += device_breakdown(events, ns(s.begin_ticks), ns(s.end_ticks));
    out.dt_ms += s.dt_ms;
    ++out.steps;
    for (int64_t t : rec.graph_launch_ticks) out.graph_launches += t >= s.begin_ticks && t <= s.end_ticks;
  }
  return out;
}

BusyInvariant check_busy_within_dt(double busy_ms, double step_dt_ms, double slack_pct) {
  BusyInvariant inv{busy_ms, step_dt_ms, slack_pct, false, ""};
  if (!(step_dt_ms > 0) || !std::isfinite(busy_ms)) {
    inv.reason = fmt::format("no step time to check against (busy {:.3f} ms, dt {:.3f} ms)", busy_ms, step_dt_ms);
    return inv;
  }
  inv.holds = busy_ms <= step_dt_ms * (1.0 + slack_pct / 100.0);
  if (!inv.holds)
    inv.reason = fmt::format(
        "the device was busy {:.3f} ms per step but the step took {:.3f} ms ({:.2f}x, more than the {}% "
        "slack): activity is counted more than once or on the wrong clock",
        busy_ms, step_dt_ms, busy_ms / step_dt_ms, slack_pct);
  return inv;
}

void add_invariant(OpBreakdownSection& b, const BusyInvariant& inv) {
  b.invariant = BusyInvariantSection{"busy_ms <= step_dt_ms * (1 + slack_pct/100), per step", inv.busy_ms,
                                     inv.step_dt_ms, inv.slack_pct, inv.holds};
  b.valid = inv.holds;
  b.invalid_reason = inv.holds ? std::nullopt : std::optional<std::string>(inv.reason);
}

}  // namespace ladder::profiler
