// bench/run/summary_rows.h: the rows of a run's summary.json, one per measured
// cell or peer: its figures (medians over --repeat processes), whether the
// machine was quiet while it ran, and the switches in effect. The table
// (reports/render/table.h) prints them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/run/matrix.h"

namespace ladder {

// What every summary row has, whatever happened to the cell: on a side of an
// A/B run (--ab) its cell is "<side>/<cell>" and it names its side.
nlohmann::json row_base(const Cell& c, const std::string& status, const nlohmann::json& parity,
                        const std::string& side = "");

// A cell's row: every run-level figure (reports/model/run_figures.h) from the one
// report, or with --repeat N across the N processes (the median of each
// one's value; a process is the independent sample, its steps are not), with
// the per-process values listed (per_process). Peak memory is the largest of
// the processes'.
// `reports` and `rounds` are parallel: the round each process ran in.
nlohmann::json summary_row(const Cell& c, const std::vector<nlohmann::json>& reports, const std::vector<int>& rounds,
                           const nlohmann::json& parity, const std::string& side = "");

}  // namespace ladder
