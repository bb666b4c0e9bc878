// reports/commands/compare.h: `ladder compare BASELINE OTHER [MORE ...]`:
// loads the inputs (reports/model/report/report_loader.h), compares them
// (reports/model/comparison/comparison.h) and renders the comparison's document
// (reports/render/documents/comparison_document.h) in the format asked for.
#pragma once

#include <string>
#include <vector>

namespace ladder {

// The process exit code; throws ConfigError for bad input.
int compare_command(const std::vector<std::string>& args);

}  // namespace ladder
