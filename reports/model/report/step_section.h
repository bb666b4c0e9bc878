// reports/model/report/step_section.h: a rung report's per-step columns
// (steps, warmup_steps, and a ddp rank's in ddp.per_rank[]) and their summary
// statistics (summary), as structs.
//
// Which metrics there are is the step metrics' declaration
// (bench/measure/harness/step_metrics.h), one layer up: so these convert
// themselves (nlohmann's to_json and from_json, which profiler/common/fields.h
// calls), and their schema is made there (bench/measure/report/report_schema.cpp).
// Reading is as strict as the field lists': a value that does not read names
// its path under the report's ("report.json.steps.loss[3]: ...").
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/common/fields.h"
#include "reports/stats/stats.h"

namespace ladder {

// One step metric's values, one per step. A NaN (a diverged loss) is
// written null and read back as NaN; a column of integers (a count, bytes)
// is written as integers.
struct StepColumn {
  std::vector<double> values;
  bool integer = false;
};

inline void to_json(nlohmann::json& j, const StepColumn& c) {
  if (c.integer) j = std::vector<int64_t>(c.values.begin(), c.values.end());
  else j = c.values;  // NaN: null
}

// `path` is relative to the enclosing value's (".loss"); a column of
// integers only is read as one.
inline StepColumn read_step_column(const nlohmann::json& j, const std::string& path) {
  if (!j.is_array()) fields::detail::fail(path, fields::detail::shown(j), "an array of numbers");
  StepColumn c;
  c.integer = !j.empty();
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& v = j[i];
    if (!v.is_number() && !v.is_null())
      fields::detail::fail(path + "[" + std::to_string(i) + "]", fields::detail::shown(v), "a number or null (NaN)");
    c.integer = c.integer && v.is_number_integer();
    c.values.push_back(v.is_null() ? std::nan("") : v.get<double>());
  }
  return c;
}

// report.steps and report.warmup_steps: the steps' numbers, a column per
// step metric these steps have, and with --breakdown each phase's time per
// step.
struct StepColumns {
  std::vector<int64_t> step;
  std::map<std::string, StepColumn> columns;
  std::map<std::string, std::vector<double>> phase_ms;  // empty: the phases were not timed apart
  // The metric's values, or nullptr where these steps have no such column.
  const std::vector<double>* of(const std::string& metric) const {
    const auto it = columns.find(metric);
    return it == columns.end() ? nullptr : &it->second.values;
  }
};

inline void to_json(nlohmann::json& j, const StepColumns& s) {
  j = nlohmann::json::object();
  j["step"] = s.step;
  for (const auto& [key, c] : s.columns) j[key] = c;
  if (!s.phase_ms.empty()) j["phase_ms"] = s.phase_ms;
}

inline void from_json(const nlohmann::json& j, StepColumns& s) {
  s = StepColumns{};
  if (!j.contains("step")) fields::detail::fail(".step", "missing", "the steps' numbers");
  s.step = fields::from_json<std::vector<int64_t>>(j["step"], ".step");
  for (const auto& [key, values] : j.items()) {
    if (key == "step") continue;
    if (key != "phase_ms") {
      s.columns[key] = read_step_column(values, "." + key);
      continue;
    }
    if (!values.is_object()) fields::detail::fail(".phase_ms", fields::detail::shown(values), "an object of columns");
    for (const auto& [phase, times] : values.items())
      s.phase_ms[phase] = read_step_column(times, ".phase_ms." + phase).values;
  }
}

// report.summary: the statistics of each summarised step metric (and of
// MFU against the measured roofline per step) under the metric's key, and
// each phase's under phase_ms; each reads strictly as a Summary.
struct StepSummary {
  std::map<std::string, Summary> metrics;
  std::map<std::string, Summary> phase_ms;  // empty: the phases were not timed apart
  // The metric's statistics, or nullptr where the summary has none.
  const Summary* of(const std::string& metric) const {
    const auto it = metrics.find(metric);
    return it == metrics.end() ? nullptr : &it->second;
  }
};

inline void to_json(nlohmann::json& j, const StepSummary& s) {
  j = fields::to_json(s.metrics);
  if (!s.phase_ms.empty()) j["phase_ms"] = fields::to_json(s.phase_ms);
}

inline void from_json(const nlohmann::json& j, StepSummary& s) {
  s = StepSummary{};
  for (const auto& [key, stats] : j.items()) {
    if (key == "phase_ms") s.phase_ms = fields::from_json<std::map<std::string, Summary>>(stats, ".phase_ms");
    else s.metrics[key] = fields::from_json<Summary>(stats, "." + key);
  }
}

}  // namespace ladder
