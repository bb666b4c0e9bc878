// reports/render/documents/run_document.h: the final table of a run, as a Document (its ratios:
// reports/model/run/ratios.h).
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "reports/model/run/run_model.h"
#include "reports/render/document.h"

namespace ladder {

// The run's table and the lines under it, from summary.json's content: what
// `ladder run` prints at its end and `ladder export` renders.
Document run_document(const RunSummary& summary, const std::string& summary_path);
// The edge from summary.json's content: read (read_run_summary), rendered by
// run_document, and kept as the document's data, which --format json writes
// as it is.
Document summary_document(const nlohmann::json& summary, const std::string& summary_path);

// Prints run_document in `format` (a --format name, reports/render/reporter.h); a
// format that needs the reports reads them beside `summary_path`.
void print_summary_table(const nlohmann::json& summary, const std::string& summary_path,
                         const std::string& format = "text");

}  // namespace ladder
