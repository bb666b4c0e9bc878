// reports/model/report/rung_facts.h: what `ladder compare` reads of a rung report (the
// struct RungReport, reports/model/report/rung_report.h), for the comparison
// (reports/model/comparison/comparison.h).
//
// A report from before a field was recorded (the noise monitor, the speed
// probe, the build stamp) reads as not having it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/model/report/rung_report.h"

namespace ladder {

struct RungFacts {
  std::string status;                 // "ok", "failed", ...; "missing" when the report has none
  std::vector<double> dt_ms;          // every measured step's
  std::optional<double> dt_ms_median;  // summary.dt_ms.median
  std::optional<RunConfig> config;  // none for a cell's placeholder (no report)
  // The switches the report's build declared (its switches section's names);
  // none where the report has no such section (a failure's).
  std::optional<std::set<std::string>> declared_switches;
  // The noise monitor's readings (bench/measure/observers/noise_monitor.h), when recorded:
  // steal_pct_of_wall, cpu_pct_of_threads, involuntary_switches_per_s, load_1m (its end).
  bool has_noise = false;
  std::map<std::string, double> noise_readings;
  std::vector<std::string> noise_causes;
  std::optional<double> speed_index_per_s;  // the speed probe's (bench/measure/observers/speed_probe.h)
  std::optional<double> test_slowdown_pct;  // the test-only slowdown hook's
  std::optional<std::string> test_slow_op;  // the test-only operator slowdown's (op_breakdown.test_slow_op)
  std::optional<std::string> git_commit;    // ladder's build (suite.git_commit)
  // The op breakdown of the step, when valid: ms per category, and each
  // category's largest kernels or operators (when the report lists them).
  std::optional<profiler::PerCategory<double>> op_breakdown_ms;
  std::optional<profiler::PerCategory<std::vector<profiler::NamedTotal>>> op_breakdown_top;
  std::optional<SpeedOfLightSection> speed_of_light;  // the report's table, when it has one
};

RungFacts read_rung_facts(const RungReport& report);

// Flattens nested objects into "a.b.c" -> value.
void flatten(const nlohmann::json& j, const std::string& prefix, std::map<std::string, nlohmann::json>& out);

}  // namespace ladder
