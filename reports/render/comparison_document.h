// reports/render/comparison_document.h: the comparison (compare_runs's
// model, reports/model/comparison.h) as tables for the formats of
// reports/render/reporter.h: one row per rung and input, the ladder's shape,
// and the lines around them.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "reports/render/document.h"

namespace ladder {

Document comparison_document(const nlohmann::json& cmp);

}  // namespace ladder
