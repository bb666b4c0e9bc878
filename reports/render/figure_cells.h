// reports/render/figure_cells.h: a run-level figure (reports/model/report/run_figures.h)
// in a document's table: its column and its cells.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "reports/model/report/run_figures.h"
#include "reports/model/run/run_model.h"
#include "reports/render/document.h"

namespace ladder {

// The figure's cell in a table: its value (scaled) as text, with its marker,
// or "-" when absent.
TableCell figure_cell(const RunFigure& f, const std::optional<double>& value, const std::string& marker = "");
// The same for a figure as a summary wrote it: an integer is given back as one.
TableCell figure_cell(const RunFigure& f, const std::optional<WrittenNumber>& value, const std::string& marker = "");
// Its column.
Column figure_column(const RunFigure& f, const std::string& key_prefix = "");

// How a terminal colours a verdict (reports/stats/verdict.h, and compare's
// missing, cannot judge, added, removed): faster good, slower bad, within
// noise plain, the rest a warning.
Tone verdict_tone(const std::string& verdict);

}  // namespace ladder
