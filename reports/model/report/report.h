// reports/model/report/report.h: the rung report, one JSON file per rung run.
//
// The format is the struct RungReport (reports/model/report/rung_report.h), from
// which reports/rung_report.schema.json is generated, versioned by
// kSchemaVersion. Every metric key carries its unit (dt_ms, tokens_per_s,
// mfu_pct, peak_reserved_bytes). Per-step series are stored as columns
// (bench/measure/harness/step_columns.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/model/report/rung_report.h"
#include "variants/config/config.h"

namespace ladder {

// "20261121T213600Z" style UTC timestamps and ISO 8601 strings.
std::string utc_now_iso8601();
std::string new_run_id();

// The fields every rung report starts with, complete or failed: format,
// run id, rung, start time, the suite that wrote it, and the config.
RungReport rung_report_header(const RunConfig& cfg, const std::string& run_id, const std::vector<std::string>& argv,
                              const std::string& started_at);

// <run_dir>/<rung>/report.json
std::string report_path(const std::string& run_dir, const std::string& rung);

void write_report(const std::string& path, const nlohmann::json& report);

}  // namespace ladder
