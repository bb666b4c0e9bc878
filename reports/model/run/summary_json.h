// reports/model/run/summary_json.h: the edge between summary.json and the run model
// (reports/model/run/run_model.h): a summary's content as structs, and the ratios
// (reports/model/run/ratios.h) written back into its rows. Reading is lenient: an
// absent or mistyped field reads as absent, so an older summary or an odd row
// renders as dashes, never throws.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/model/report/roofline_section.h"
#include "reports/model/run/run_model.h"

namespace ladder {

// The edges: a summary's content, and its rows, as structs.
RunSummary read_run_summary(const nlohmann::json& summary);
SummaryRow read_summary_row(const nlohmann::json& row);
std::vector<SummaryRow> read_summary_rows(const nlohmann::json& rows);

// A roofline's figures, "bf16 0.439, fp32 0.2, tf32 0.201" (TFLOP/s).
std::string roofline_figures(const RooflineFile& roofline);

// Its memory bandwidth at the largest working set (DRAM), "DRAM copy 12.5,
// triad 13.6 GB/s (1024 MiB)", or "" when it has none (a roofline.json
// measured before the bandwidth probe).
std::string roofline_memory_figures(const RooflineFile& roofline);

// Writes each row's ratios into the matching JSON row (same order), under the
// keys of each kind (reports/model/run/ratios.h): `<key>`, `<key>_interval`,
// `<key>_against` (`b_over_a_p` too), or the peer's ladder_vs_peer object.
void write_ratios(const std::vector<SummaryRow>& rows, nlohmann::json& json_rows);

// Adds every ratio (reports/model/run/ratios.h) to summary.json's rows, as
// bench/run/runner.cpp does before writing them.
void add_ratios(nlohmann::json& rows);

}  // namespace ladder
