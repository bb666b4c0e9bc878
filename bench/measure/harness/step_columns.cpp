// bench/measure/harness/step_columns.cpp: see step_columns.h.
#include "bench/measure/harness/step_columns.h"

#include "reports/stats/stats.h"

namespace ladder {

namespace {
template <class F>
std::vector<double> column(const std::vector<StepRecord>& steps, F f) {
  std::vector<double> out;
  out.reserve(steps.size());
  for (const auto& s : steps) out.push_back(f(s));
  return out;
}
}  // namespace

nlohmann::json steps_to_json(const std::vector<StepRecord>& steps, const MetricContext& ctx) {
  nlohmann::json j;
  std::vector<int64_t> idx;
  for (const auto& s : steps) idx.push_back(s.step);
  j["step"] = idx;
  if (steps.empty()) {
    for (const StepMetric& m : step_metrics())
      if (!m.present) j[m.key] = std::vector<double>{};
    return j;
  }
  for (const StepMetric& m : step_metrics()) {
    if (m.present && !m.present(steps.front(), ctx)) continue;
    if (m.integer) {
      std::vector<int64_t> values;
      for (const auto& s : steps) values.push_back(int64_t(m.collect(s, ctx)));
      j[m.key] = values;
    } else {
      j[m.key] = column(steps, [&](const StepRecord& s) { return m.collect(s, ctx); });
    }
  }
  if (steps.front().has_phases) {
    nlohmann::json phases;
    for (size_t p = 0; p < std::size(kPhases); ++p)
      phases[phase_name(kPhases[p])] =
          column(steps, [&](const StepRecord& s) { return s.phase_ms[p]; });
    j["phase_ms"] = phases;
  }
  return j;
}

nlohmann::json summarize_steps(const std::vector<StepRecord>& steps, const MetricContext& ctx) {
  nlohmann::json cols = steps_to_json(steps, ctx);
  nlohmann::json j;
  for (const StepMetric& m : step_metrics())
    if (m.summarised && cols.contains(m.key)) j[m.key] = summarize(cols[m.key].get<std::vector<double>>());
  if (cols.contains("phase_ms")) {
    for (auto& [name, values] : cols["phase_ms"].items())
      j["phase_ms"][name] = summarize(values.get<std::vector<double>>());
  }
  return j;
}

}  // namespace ladder
