// bench/run/summary_rows.h: the rows of a run's summary.json, one per measured
// cell or peer: its figures (medians over --repeat processes), whether the
// machine was quiet while it ran, and the switches in effect. The table
// (reports/render/documents/run_document.h) prints them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/run/matrix.h"
#include "reports/model/report/rung_report.h"

namespace ladder {

// What a row says beyond its cell's reports.
struct RowContext {
  nlohmann::json parity;     // bench/run/parity.h: the verdict, or why there is none
  std::string side;          // --ab: "A" or "B"; on a side, the row's cell is "<side>/<cell>"
  std::vector<int> not_run;  // rounds the cell was planned in whose process never ran
  std::optional<PeerSection> peer;  // a peer's row: its report's peer section; none for a rung
};

// The row of a cell without reports: not runnable (`reason` says why), or
// missing.
nlohmann::json row_without_reports(const Cell& c, const std::string& status, const RowContext& ctx,
                                   const std::string& reason = "");

// A cell's row (reports/model/run/summary_doc.h): every run-level figure
// (reports/model/report/run_figures.h) from the one report, or with --repeat N
// across the N processes (the median of each one's value; a process is the
// independent sample, its steps are not), with the per-process values listed
// (per_process). Peak memory is the largest of the processes'.
// `reports` and `rounds` are parallel: the round each process ran in.
nlohmann::json summary_row(const Cell& c, const std::vector<RungReport>& reports, const std::vector<int>& rounds,
                           const RowContext& ctx);

}  // namespace ladder
