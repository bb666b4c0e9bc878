// bench/run_dir.h: the layout of a run directory, and its matrix.json, which
// --resume reads back.
//
//   <run_dir>/matrix.json                 the cells and the run's options, written first
//   <run_dir>/roofline.json, summary.json
//   <run_dir>/<cell>/config.json          what the cell's child reads
//   <run_dir>/<cell>/report.json          repeat 1 (every run has it)
//   <run_dir>/<cell>/repeat<k>/report.json  repeat k of --repeat N
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/matrix.h"
#include "bench/runner_options.h"

namespace ladder {

// The file parsed as JSON; nullopt when it is missing or malformed.
std::optional<nlohmann::json> read_json(const std::filesystem::path& path);

std::filesystem::path cell_dir(const RunnerOptions& o, const Cell& c);
std::filesystem::path cell_report(const RunnerOptions& o, const Cell& c, int repeat = 1);
// A process's name in progress lines and the summary's `missing`: "fp32",
// "fp32/repeat2".
std::string job_name(const Cell& c, int repeat);
// The report's path relative to the run directory, as the summary lists it.
std::string relative_report(const Cell& c, int repeat);
// Whether that repeat of the cell has a report with status ok.
bool report_complete(const RunnerOptions& o, const Cell& c, int repeat = 1);

// <run_dir>/matrix.json: the cells and the options --resume needs.
void write_matrix_json(const std::vector<Cell>& cells, const RunnerOptions& o);

// Validates that `run_dir` is a run directory whose matrix equals `cells`
// (when `cells` is non-empty); returns the saved cells and options.
// Throws ConfigError otherwise.
std::vector<Cell> load_run_dir(const std::string& run_dir, RunnerOptions& opts);

}  // namespace ladder
