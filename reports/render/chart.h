// reports/render/chart.h: a chart of a Document (reports/render/document.h), as data: the
// categories along x (the rungs), one series per input (or one for a run)
// with a point per category, and how it is drawn (ChartKind). A format that
// draws (HTML, reports/render/html/html_chart.h) renders it; the others leave charts out,
// since the document's tables hold the same numbers.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ladder {

enum class ChartKind {
  kBars,     // grouped bars: per category, one bar per series
  kLines,    // one line per series across the categories, and a dashed reference line
  kSpread,   // per category and series, the spread of samples: box p25-p75, whisker min-max, median line, each sample
  kStacked,  // per category and series, one bar stacked from the chart's layers
};

// An interval around a value (a confidence interval, a min-max), drawn as a whisker.
struct Interval {
  double lo = 0, hi = 0;
};

// One series' data at one category.
struct ChartPoint {
  std::optional<double> value;       // kBars, kLines
  std::optional<Interval> interval;  // kBars, kLines: a whisker from lo to hi, named in the hover title
  std::vector<double> samples;       // kSpread, in the chart's unit
  std::vector<double> stack;         // kStacked: one value per layer, bottom first; 0 draws nothing
  std::string status;                // nothing to draw, and why: "missing", "failed"; "" for a dash
  std::string hover;                 // what the hover title says of the point; "": its value and unit
  bool has_data() const {
    for (double v : stack)
      if (v > 0) return true;
    return value.has_value() || !samples.empty();
  }
};

struct ChartSeries {
  std::string name;                // in the legend: an input's label, a run's id
  std::vector<ChartPoint> points;  // one per category
};

// A layer of a stacked bar (an op-breakdown category), bottom first.
struct ChartLayer {
  std::string key;     // "elementwise_norm": for machines (the segment's data-category)
  std::string label;   // "elementwise/norm": the legend's
  std::string colour;  // CSS colour: "#e15759"
};

struct Chart {
  std::string id;       // stable, for tests and links: "chart-tokens"
  std::string title;    // "Throughput per rung (median tokens/s, higher is better)"
  std::string y_title;  // "tokens/s"
  std::string unit;     // after a value in labels: "tokens/s", "GiB", "×" (a symbol follows without a space)
  ChartKind kind = ChartKind::kBars;
  std::vector<std::string> categories;  // along x: the rungs
  std::vector<ChartSeries> series;
  std::vector<ChartLayer> layers;   // kStacked; its legend (the others' legend is the series)
  std::optional<double> reference;  // a dashed horizontal line: 1 (x fp32), 0 (% off the median)
  std::vector<double> y_covers;     // values the y axis covers whatever the data: 0; -1 and 1 %
  std::string empty_note;           // shown instead of the plot when no series has data
  bool has_data() const {
    for (const auto& s : series)
      for (const auto& p : s.points)
        if (p.has_data()) return true;
    return false;
  }
};

// The colour of the i-th series: its bars, lines and legend swatch, and the
// swatch of a table cell that names it (TableCell::swatch).
inline const char* series_colour(size_t i) {
  constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1"};
  return kPalette[i % (sizeof kPalette / sizeof kPalette[0])];
}

}  // namespace ladder
