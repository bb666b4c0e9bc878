// reports/model/report/report_loader.h: reads what `ladder compare` and `ladder export`
// take as input: a run directory, a summary.json, or one rung report.
//
// Every problem is a ConfigError naming the file and what is wrong: not JSON
// (truncated, not UTF-8), not a ladder report, a newer schema_version than
// this build reads, or an older one it cannot, or a report that says "ok"
// but lacks a figure compare reads, or holds a null where a number belongs
// (a NaN is written as null): the file, the field and what was expected.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/model/report/rung_report.h"

namespace ladder {

struct LoadedRun {
  std::string label;  // "A", "B", ... in argument order
  std::string path;   // as given
  std::string run_id;
  std::vector<std::string> cells;  // in run order: a rung (fp32, flash), or <shape>/<rung>
  // Parallel to cells; any status. A cell without its report holds a
  // placeholder: only its status ("missing", or its row's).
  std::vector<RungReport> reports;
  std::vector<std::string> files;       // parallel to cells: each report's path ("" when absent)
  const RungReport* find(const std::string& cell) const;
  // The environment of the first complete report, as its JSON (empty if none).
  nlohmann::json environment() const;
  // The independent processes of this input, this one first: the N
  // processes of a `ladder run --repeat N`, or the runs of a group
  // ("a1,a2,a3", each of them flattened the same way). Empty for a single
  // process per rung.
  std::vector<LoadedRun> repeats;
  // Reports the summary lists for cells that ran ok but that are not there
  // (a summary copied without its run directory): these cells read as missing.
  std::vector<std::string> missing_reports;
};

// The runs of an input, each one process per cell: the group's repeats, or
// the run itself.
std::vector<const LoadedRun*> processes_of(const LoadedRun& run);

// A summary whose every complete cell lacks its report file is refused
// (ConfigError naming the files: there is nothing to compare); with some
// there, the missing ones are listed in missing_reports.
LoadedRun load_run(const std::string& path, const std::string& label);

// "p1,p2,...": repeated runs of the same thing, compared per run. The group
// takes the first run's cells and config; `repeats` holds all of them.
LoadedRun load_run_group(const std::string& comma_separated_paths, const std::string& label);

// One rung report.json: checked (kind, version), upgraded to today's schema
// (schema 1 and 2: the fields recorded since, as unknown or as what the
// harness did then), checked complete (an ok report has every figure
// compare reads) and read strictly into the struct. Throws ConfigError
// naming the file, the field and what was expected.
RungReport read_rung_report(const std::string& path);

// A summary.json's content, checked (kind, version) and read under today's
// row keys: rows of schema 2 and before lack the figures declared since
// (mfu_pct, ops_per_step), which are filled in from the keys they had.
nlohmann::json load_summary(const std::string& path);

// A run's summary.json: in the run directory given, or the file itself when
// it is one; "" otherwise (a single rung report, a directory without one).
std::string summary_file(const std::string& input);
// Parses a JSON file; throws ConfigError naming the file on any failure
// (never quoting its bytes: a binary file's would garble the terminal).
nlohmann::json read_json_file(const std::string& path);
// What a parse error says, without the bytes it read.
std::string parse_error_text(const nlohmann::json::parse_error& e);

}  // namespace ladder
