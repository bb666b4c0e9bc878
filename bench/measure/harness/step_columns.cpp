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

StepColumns step_columns(const std::vector<StepRecord>& steps, const MetricContext& ctx) {
  StepColumns out;
  for (const auto& s : steps) out.step.push_back(s.step);
  for (const StepMetric& m : step_metrics()) {
    if (steps.empty() ? bool(m.present) : m.present && !m.present(steps.front(), ctx)) continue;
    StepColumn& c = out.columns[m.key];
    c.integer = m.integer;
    c.values = column(steps, [&](const StepRecord& s) {
      const double v = m.collect(s, ctx);
      return m.integer ? double(int64_t(v)) : v;
    });
  }
  if (!steps.empty() && steps.front().has_phases)
    for (size_t p = 0; p < std::size(kPhases); ++p)
      out.phase_ms[phase_name(kPhases[p])] = column(steps, [&](const StepRecord& s) { return s.phase_ms[p]; });
  return out;
}

StepSummary summarize_steps(const StepColumns& cols) {
  StepSummary out;
  for (const StepMetric& m : step_metrics())
    if (const std::vector<double>* values = m.summarised ? cols.of(m.key) : nullptr)
      out.metrics[m.key] = summarize(*values);
  for (const auto& [phase, times] : cols.phase_ms) out.phase_ms[phase] = summarize(times);
  return out;
}

}  // namespace ladder
