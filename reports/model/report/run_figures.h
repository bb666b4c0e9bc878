// reports/model/report/run_figures.h: a run-level figure is one declaration.
//
// A run-level figure is one number per cell of a run (a rung or a peer): its
// median step time, tokens/s, MFU, peak memory, ... Each RunFigure names its
// key with its unit (the key of summary.json's rows), says what it is, how
// one process's value is read from its rung report, how the values of a
// cell's processes combine (--repeat N), and how it is shown: a column of the
// run table and of compare's table, a chart of the HTML page. The summary
// rows (bench/run/summary_rows.cpp), the run table (reports/render/documents/run_document.cpp), compare's
// input figures and table (reports/model/comparison/comparison.cpp) and the HTML charts all come
// from the list in run_figures.cpp: a new figure is one entry there, and the
// summary schema's column follows from it (reports/model/run/summary_doc.h).
//
// The per-step metrics each report carries are declared the same way, a
// layer below, in bench/measure/harness/step_metrics.cpp.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reports/model/report/rung_report.h"

namespace ladder {

// How the values of a cell's processes make the row's value.
enum class Across {
  kMedian,  // the median of the per-process values (each process is one independent sample)
  kMax,     // the largest (peak memory: what the cell needs)
};

// Where a figure is shown, a bit each.
enum Shown : unsigned {
  kSummaryOnly = 0,     // in summary.json's rows, in no table
  kRunTable = 1u << 0,  // a column of `ladder run`'s table (and `ladder export`'s)
  kCompareTable = 1u << 1,  // a column of `ladder compare`'s table, per input
};

struct RunFigure {
  const char* key;     // the summary row's key, with its unit: "dt_ms_median"
  const char* what;    // one line, for the docs
  // One process's value from its complete ("ok") rung report; none when the
  // report has none (an older report, a figure this device cannot measure).
  std::optional<double> (*of_report)(const RungReport& report);
  Across across;
  // How it is shown: a column headed `header` (with `unit` after it when the
  // header lacks it), the value times `scale` formatted by `format`, and the
  // text `marker` returns appended ("p": MFU against the measured roofline).
  const char* header;
  const char* unit;
  const char* format;
  double scale;
  const char* (*marker)(const RungReport& report);  // nullptr: none
  unsigned shown;      // Shown bits
  const char* chart;   // an HTML chart of it per rung and input, titled so; nullptr: none
};

// In column order.
const std::vector<RunFigure>& run_figures();
const RunFigure& run_figure(const std::string& key);  // throws std::logic_error for an undeclared key

// Whether a key ends in a unit (ms, s, pct, bytes, per_s, per_step, tflops,
// x), optionally followed by a statistic or a basis (median, mean, min, max,
// datasheet, measured_roofline, of_dt): the keys the summary schema admits as
// figures without naming them (reports/run_summary.schema.json, the row's
// patternProperties: a figure since renamed, in an older summary).
extern const char* const kFigureKeyPattern;
bool figure_key_has_unit(const std::string& key);

// Run-level figures by key: a value each, none where it is not known.
using FigureValues = std::map<std::string, std::optional<double>>;

// A cell's figures from its processes' reports (each complete): every
// figure's value across processes (none where a process lacks it), each
// one's per-process values, and the first process's markers.
struct CellFigures {
  FigureValues values;
  std::map<std::string, std::vector<std::optional<double>>> per_process;
  std::map<std::string, std::string> markers;
};
CellFigures cell_figures_of(const std::vector<const RungReport*>& reports);

}  // namespace ladder
