// reports/model/report/rung_facts.cpp: see rung_facts.h. What compare reads of a rung
// report, from the struct.
#include "reports/model/report/rung_facts.h"

#include <cmath>

namespace ladder {

using nlohmann::json;

void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else {
    out[prefix] = j;
  }
}

namespace {

void read_noise(const std::optional<NoiseSection>& noise, RungFacts& f) {
  if (!noise) return;  // a peer, or a report from before the noise monitor
  f.has_noise = true;
  if (noise->steal_pct_of_wall) f.noise_readings["steal_pct_of_wall"] = *noise->steal_pct_of_wall;
  if (noise->cpu_pct_of_threads) f.noise_readings["cpu_pct_of_threads"] = *noise->cpu_pct_of_threads;
  if (noise->involuntary_switches_per_s)
    f.noise_readings["involuntary_switches_per_s"] = *noise->involuntary_switches_per_s;
  f.noise_readings["load_1m"] = noise->load_1m.end;
  for (const auto& c : noise->causes) f.noise_causes.push_back(c);
  if (noise->probe) f.speed_index_per_s = noise->probe->speed_index_per_s;
}

}  // namespace

RungFacts read_rung_facts(const RungReport& report) {
  RungFacts f;
  f.status = report.status.empty() ? "missing" : report.status;
  if (const std::vector<double>* dt = report.steps ? report.steps->of("dt_ms") : nullptr)
    for (const double v : *dt)
      if (!std::isnan(v)) f.dt_ms.push_back(v);
  if (const auto dt = report.summary_value("dt_ms")) f.dt_ms_median = *dt;
  if (!report.kind.empty()) f.config = report.config;  // read from its file, not a cell's placeholder
  if (report.switches) {
    f.declared_switches.emplace();
    for (const auto& [name, effect] : *report.switches) f.declared_switches->insert(name);
  }
  if (report.timing) {
    read_noise(report.timing->noise, f);
    f.test_slowdown_pct = report.timing->test_slowdown_pct;
  }
  if (report.suite) f.git_commit = report.suite->git_commit;
  if (report.op_breakdown && *report.op_breakdown) {
    const profiler::OpBreakdownSection& b = **report.op_breakdown;
    if (b.test_slow_op) f.test_slow_op = *b.test_slow_op;
    if (b.valid.value_or(false) && b.categories_ms) {
      f.op_breakdown_ms = *b.categories_ms;
      f.op_breakdown_top = b.top_by_category;
    }
  }
  if (const SpeedOfLightSection* sol = sol_table(report.speed_of_light)) f.speed_of_light = *sol;
  return f;
}

}  // namespace ladder
