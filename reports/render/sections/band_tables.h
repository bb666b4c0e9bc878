// reports/render/sections/band_tables.h: where a step's time goes, band by band, side by side.
//
// A band is a category of the op breakdown (profiler/trace/op_categories.h), in ms
// per step: GEMM, attention, elementwise/norm, ... and idle/other. The table
// puts sources beside each other, one column each, then one difference column
// per pair asked for: ladder's top rung against each PyTorch peer of a run
// (`ladder run --peers`, `ladder bands`), or a rung across `ladder compare`'s
// inputs (each against the baseline). A sum row and the step's median dt
// close it, and a line says which band the first source loses most in.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/model/report/rung_report.h"

#include "reports/model/run/run_model.h"
#include "reports/render/document.h"

namespace ladder {

// One column: a breakdown's categories_ms and the step's median dt (null when unknown).
struct BandSource {
  std::string label;            // "ladder fused-adamw", "peer compile", "A"
  std::map<std::string, double> categories_ms;  // {"gemm": 22.24, ...}: a newer breakdown may add a band
  std::optional<double> dt_ms;  // the median step time of the same process(es)
  int processes = 1;            // how many processes' breakdowns it stands for
};

// The source of a rung report's op breakdown, or nullopt with `why` set
// (no breakdown, unavailable, invalid).
std::optional<BandSource> band_source(const RungReport& report, const std::string& label, std::string* why);

// One column from several processes' breakdowns of the same cell: each band
// the median over the processes that have it, dt the median of their dt.
BandSource median_band_source(const std::string& label, const std::vector<BandSource>& processes);

// Columns: each source's ms per band, then for each pair (a, b) `a - b`.
// Bands that are zero in every source are left out; idle/other comes last.
Table band_table(std::string title, const std::vector<BandSource>& sources,
                 const std::vector<std::pair<size_t, size_t>>& differences);

// "fused-adamw against peer compile: largest gap gemm +5.71 ms per step
// (sum 39.62 vs 41.56 ms)", or "no band slower" when a is ahead in each.
Line band_verdict(const std::vector<BandSource>& sources, size_t a, size_t b);

// A run's band tables, one per shape with peers: the rung its peers are
// compared with (the summary's peers.compared_with, else fused-adamw) against
// every peer that ran, from every round's reports in `run_dir` (each band the
// median over a cell's processes, median_band_source), with one
// difference column per peer; `against` names the peer whose difference comes
// first and whose verdict line is given ("" for compile where it ran, else
// eager). `why` says what kept a table out: no peer ran, the rung did not, a
// breakdown is missing; `exit_code` is `ladder bands`' for it (0 tables,
// 1 the rung or a breakdown missing, 3 no peer to compare against).
struct RunBands {
  std::vector<Table> tables;
  std::string why;
  int exit_code = 0;
};
RunBands run_band_table(const RunSummary& run, const std::string& run_dir, const std::string& against = "");

}  // namespace ladder
