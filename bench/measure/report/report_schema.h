// bench/measure/report/report_schema.h: the rung report's JSON Schema, generated.
//
// reports/rung_report.schema.json is this function's output, never edited
// by hand: the typed sections from the struct RungReport's fields
// (reports/model/report/rung_report.h), the per-step columns and their summary from
// the step metrics' declarations (step_metrics.h). `ladder schema` prints it (or
// writes it: --out FILE), and the test ReportSchema.CommittedFileIsGenerated
// fails while the committed file differs. `ladder schema --summary` does the
// same for reports/run_summary.schema.json (reports/model/run/summary_doc.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ladder {

nlohmann::json rung_report_schema();

// `ladder schema [--summary] [--out FILE]`: the schema as JSON, two-space indented.
int schema_command(const std::vector<std::string>& args);

}  // namespace ladder
