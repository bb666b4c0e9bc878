// reports/model/comparison/comparison_model.h: `ladder compare`'s comparison as structs
// (reports/model/comparison/comparison.cpp builds it): the model every output format
// renders (reports/render/documents/comparison_document.cpp reads these structs). Its
// JSON is `--format json`'s: comparison_json.cpp writes it, and reads it back
// (a saved comparison, the tests' fixture).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/trace/breakdown_section.h"
#include "reports/model/comparison/kernel_comparison.h"
#include "reports/model/report/slow_rank.h"
#include "reports/model/report/speed_of_light_section.h"

namespace ladder {

// An interval's bounds, lo and hi.
using Bounds = std::pair<double, double>;

// The comparison's JSON: its schema version and the figure its verdicts test.
inline constexpr int kComparisonSchemaVersion = 1;
inline constexpr const char* kComparisonMetric = "dt_ms";

// One input's figures for a rung (reports/model/report/run_figures.h) across its
// processes, and the samples its verdict tests. A cell that is not ok holds
// its status alone.
struct InputCell {
  std::string status = "missing";  // "ok", or the first failed process's status, or "missing"
  size_t runs = 0;                 // processes
  std::vector<int> rounds;         // the round of each process: its member's place in the input
  std::map<std::string, std::string> markers;     // a figure's marker by key ("p": against the datasheet)
  std::map<std::string, std::optional<double>> figures;  // every run-level figure, by key (none: not known)
  std::string sample;              // "median of 2 per-process medians"
  std::vector<double> dt_ms_samples;  // every step of every process
  std::vector<std::optional<double>> dt_ms_run_medians, tokens_per_s_run_medians;  // per process
  std::optional<double> speedup_vs_fp32;  // over the input's own fp32 of the same shape
  // Its interval: recorded (possibly none) for a rung other than fp32 whose input has fp32.
  bool speedup_interval_recorded = false;
  std::optional<Bounds> speedup_vs_fp32_interval;
  // The first process's op breakdown, when valid: ms per category, and each
  // category's largest kernels or operators (when its report lists them).
  std::optional<profiler::PerCategory<double>> op_breakdown_ms;
  std::optional<profiler::PerCategory<std::vector<profiler::NamedTotal>>> op_breakdown_top;
  std::optional<SpeedOfLightSection> speed_of_light;  // the first process's table, when its report has one
  std::vector<SlowRank> slow_rank;  // a multi-rank rung: each process's verdict on its ranks
  bool ok() const { return status == "ok"; }
  double figure(const char* key) const;  // a figure recorded as a number
};

// One input against the baseline on a rung.
struct Verdict {
  std::string verdict;  // faster, slower, within noise, unresolved, cannot judge, missing
  double ratio_tokens_per_s = 0, ratio_dt_ms = 0, change_pct = 0, noise_threshold_pct = 0;
  size_t n_base = 0, n_other = 0;  // processes a side
  std::string why;
  // With 2+ processes a side: the test.
  std::optional<Bounds> tokens_per_s_interval, dt_ms_interval;
  double df = 0;
  std::optional<double> p_value, p_holm;
  size_t tests_in_family = 0;
  std::string method;
  bool tested() const { return p_value.has_value(); }
};

struct ComparedRung {
  std::string rung, cell;  // rung: as shown ("peer:eager")
  bool peer = false;
  std::vector<InputCell> inputs;
  std::vector<std::optional<Verdict>> vs_baseline;  // none for the baseline itself
};

// Each input's speedup over its own fp32, and its ratio to the baseline's.
struct ShapeRow {
  std::string rung;
  std::vector<std::optional<double>> speedup_vs_fp32;
  std::vector<std::optional<Bounds>> speedup_vs_fp32_interval;
  std::vector<std::optional<double>> ratio_to_baseline;  // none for the baseline
  std::vector<std::optional<Bounds>> ratio_to_baseline_interval;
};

struct Geomean {
  double ratio_tokens_per_s = 0, ratio_dt_ms = 0;
  int rungs = 0;
};

// What disturbed an input's processes: the median of each noise reading over
// its complete reports, and every cause named.
struct InputNoise {
  std::vector<std::string> causes;
  std::optional<double> probe_half_range_pct;
  std::map<std::string, double> readings;
};

struct ComparedInput {
  std::string label, path, run_id;
  size_t processes_per_rung = 1;
  std::string device;  // the device's name, or "?"
  std::map<std::string, nlohmann::json> environment;  // the subject keys
  std::optional<InputNoise> noise;
};

struct Comparison {
  double alpha = 0.05, noise_threshold_pct = 1;
  std::vector<ComparedInput> inputs;
  std::vector<std::string> warnings, forced_differences, environment_unknown_in;
  std::map<std::string, std::vector<nlohmann::json>> subject;  // key -> a value per input
  std::vector<ComparedRung> rungs;
  std::vector<ShapeRow> ladder_shape;
  std::vector<std::optional<Geomean>> geomean;  // none for the baseline
  std::optional<KernelComparison> kernels;       // --kernels
};

nlohmann::json comparison_json(const Comparison& c);

// A comparison's JSON read back, defensively: an absent, null or mistyped
// field is left empty (a dash when rendered), never an exception; `{}`, null
// or an array read as an empty comparison.
Comparison comparison_from_json(const nlohmann::json& j);

}  // namespace ladder
