// bench/run/run_dir.h: the layout of a run directory, and its matrix.json, which
// --resume reads back.
//
//   <run_dir>/matrix.json                 the cells and the run's options, written first
//   <run_dir>/plan.json                   every job: cell, round (and side), by round
//   <run_dir>/roofline.json, summary.json
//   <run_dir>/<cell>/config.json          what the cell's child reads
//   <run_dir>/<cell>/report.json          round 1 (every run has it)
//   <run_dir>/<cell>/repeat<k>/report.json  round k (--repeat N, --repeat auto)
// A one-run A/B comparison (--ab) has both layouts once per side, under
// <run_dir>/A/ and <run_dir>/B/.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/run/matrix.h"
#include "bench/run/runner_options.h"
#include "reports/model/report/rung_report.h"

namespace ladder {

// The file parsed as JSON; nullopt when it is missing or malformed.
std::optional<nlohmann::json> read_json(const std::filesystem::path& path);
// A rung report this run wrote, read strictly into the struct (ConfigError
// naming the file and the field); nullopt when there is none or it is not
// JSON (a process that never ran, or died before writing).
std::optional<RungReport> read_run_report(const std::filesystem::path& path);

// One process of a cell: its round (1, 2, ...) and, in a one-run A/B
// comparison, its side ("A" or "B"; "" otherwise).
struct Job {
  const Cell* cell;
  int round = 1;
  std::string side;
};

std::filesystem::path cell_dir(const RunnerOptions& o, const Cell& c, const std::string& side = "");
std::filesystem::path cell_report(const RunnerOptions& o, const Cell& c, int round = 1, const std::string& side = "");
std::filesystem::path job_report(const RunnerOptions& o, const Job& j);
// A process's name in progress lines and the summary's `missing`: fp32,
// fp32/repeat2, B/fp32/repeat2.
std::string job_name(const Job& j);
// The report's path relative to the run directory, as the summary lists it.
std::string relative_report(const Cell& c, int round, const std::string& side = "");
// Whether that process of the cell has a report with status ok.
bool report_complete(const RunnerOptions& o, const Job& j);

// <run_dir>/plan.json: every job scheduled so far, in order (--resume reads
// it; --repeat auto appends rounds to it).
void write_plan(const RunnerOptions& o, const std::vector<Job>& jobs);
// The saved plan's jobs over `cells`; empty when there is no plan.json (a
// run from before plans: its jobs are the default schedule's).
std::vector<Job> read_plan(const RunnerOptions& o, const std::vector<Cell>& cells);

// <run_dir>/matrix.json: the cells and the options --resume needs.
void write_matrix_json(const std::vector<Cell>& cells, const RunnerOptions& o);

// Validates that `run_dir` is a run directory whose matrix equals `cells`
// (when `cells` is non-empty); returns the saved cells and options.
// Throws ConfigError otherwise.
std::vector<Cell> load_run_dir(const std::string& run_dir, RunnerOptions& opts);

}  // namespace ladder
