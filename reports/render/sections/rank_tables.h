// reports/render/sections/rank_tables.h: the ranks of a multi-rank report, side by side.
//
// What ddp.per_rank and ddp.slow_rank (reports/model/report/slow_rank.h) hold, as a
// person reads it: a phases table (a row per rank: its median ms per step in
// data, forward, backward, optimizer and the communication wait, their sum,
// the straggler marked), a bands table (a column per rank from its op
// breakdown, then the slowest rank's difference to each other), the verdict
// line, and a chart of each rank's phases as one stacked bar, ranks side by
// side, so that the straggler is seen before a number is read. `ladder
// bands RUN --ranks` prints the tables; the run page draws the chart and
// shows the tables in a section.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/model/report/rung_report.h"
#include "reports/render/chart.h"
#include "reports/model/run/run_model.h"
#include "reports/render/document.h"

namespace ladder {

struct RankView {
  std::vector<Table> tables;  // phases, then bands (where every rank has them)
  Line verdict{""};           // "ranks: rank 2 slowest, ..."
  Chart chart;                // id "chart-ranks-<cell>"
};

// nullopt, with `why`, for a report with no per-rank phases (not a
// multi-rank report, or one from before 2026-12-02).
std::optional<RankView> rank_view(const RungReport& report, const std::string& cell, std::string* why);

// The view of every multi-rank cell of a run (each from its first
// process's report), with why there is none.
struct RunRanks {
  std::vector<RankView> views;
  std::string why;
};
RunRanks run_rank_views(const RunSummary& run, const std::string& run_dir);

}  // namespace ladder
