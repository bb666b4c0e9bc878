// reports/render/documents/comparison_document.h: the comparison (compare's model,
// reports/model/comparison/comparison_model.h) as tables for the formats of
// reports/render/reporter.h: one row per rung and input, the ladder's shape,
// and the lines around them.
#pragma once

#include "reports/model/comparison/comparison_model.h"
#include "reports/render/document.h"

namespace ladder {

Document comparison_document(const Comparison& cmp);

}  // namespace ladder
