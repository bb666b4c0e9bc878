// reports/render/document.h: what `ladder run`, `ladder compare` and `ladder export`
// produce, before any output format: titled tables of typed columns, whose
// cells hold a value (the number, for machines) and its display text (for
// people), plus lines above and below them; and, for formats that draw (the
// HTML page), charts (reports/render/chart.h) and sections of supporting tables,
// which the plain formats leave out. Each format (reports/render/reporter.h) renders
// a Document; none of them knows which command made it.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/render/chart.h"
#include "reports/model/report/report_loader.h"

namespace ladder {

enum class Align { kLeft, kRight };

// How a terminal may colour a cell or a line's lead; other formats ignore it.
enum class Tone { kPlain, kGood, kBad, kWarn };

struct Column {
  std::string key;     // machine name with its unit: CSV's header, "dt_ms_median"
  std::string header;  // what people read: "dt_ms", "x fp32"
  std::string unit;    // shown after the header when not already in it: "GiB"
  Align align = Align::kRight;
  bool code = false;   // identifiers (paths, keys, kernel names): a page sets them in monospace
  std::string title() const { return unit.empty() ? header : header + " " + unit; }
};

struct TableCell {
  TableCell(std::string text = "", nlohmann::json value = nullptr, Tone tone = Tone::kPlain, std::string swatch = "")
      : text(std::move(text)), value(std::move(value)), tone(tone), swatch(std::move(swatch)) {}
  std::string text;      // as displayed: "12.34", "12.3p", "" for a repeated rung name
  nlohmann::json value;  // as machines read it: 12.3412..., a rung's name; null: use text
  Tone tone;
  std::string swatch;    // the colour of the chart series or layer the cell names (CSS); a page draws it
};

// A row of cells, one per column; or, when `section` is set, a line that
// opens a group of rows ("-- peers: ... --").
struct Row {
  Row(std::vector<TableCell> cells = {}, std::string section = "", std::string tag = "")
      : cells(std::move(cells)), section(std::move(section)), tag(std::move(tag)) {}
  std::vector<TableCell> cells;
  std::string section;
  std::string tag;  // what sets the row apart, for a page's style: "peer", "differs"; "" for none
};

// What a line is, for formats that set some lines apart; the plain formats
// print every kind alike.
enum class LineKind {
  kProse,
  kWarning,   // a caveat the reader must see: a page boxes it
  kForced,    // a difference compared anyway (--force): a page boxes it, in red
  kRestated,  // says in words what a page shows otherwise (a table, the subtitle): a page leaves it out
};

// A line of prose: an optional lead ("noise:") that a terminal may colour,
// then the text.
struct Line {
  Line(std::string text, std::string lead = "", Tone tone = Tone::kPlain, LineKind kind = LineKind::kProse)
      : text(std::move(text)), lead(std::move(lead)), tone(tone), kind(kind) {}
  std::string text;
  std::string lead;
  Tone tone;
  LineKind kind;
  std::string full() const { return lead.empty() ? text : lead + " " + text; }
};

struct Table {
  std::string title;  // "" for a document's main table
  std::vector<Column> columns;
  std::vector<Row> rows;
  std::vector<Line> notes;  // directly under the table
  std::string tag;          // what kind of table, for a page's style: "inputs", "environment"; "" for none
};

// Where a page puts a section.
enum class Placement {
  kTop,          // under the title and the preamble: the inputs, what differs
  kAfterCharts,  // what the charts need explained: the largest kernels of each breakdown band
  kBottom,       // after the tables and notes: the environments
};

// Supporting tables under a heading, which a page shows and the plain
// formats leave out (their preamble and notes say what matters of it).
struct Section {
  std::string title;  // a heading: "What differs"; "" for none
  Placement placement = Placement::kBottom;
  std::vector<Line> lines;    // under the heading
  std::vector<Table> tables;  // each under its title, or folded under it when `collapsed`
  bool collapsed = false;
  std::string tag;  // for a page's style: "breakdown-top"
};

// What a document is of; a format may render only some kinds.
enum class DocumentKind {
  kRun,         // one run: its summary table (`ladder run`, `ladder export`)
  kComparison,  // `ladder compare`'s model (reports/model/comparison/comparison.h)
};

struct Document {
  DocumentKind kind = DocumentKind::kRun;
  std::string title;           // a page's title and heading: "ladder compare: A vs B"
  std::string subtitle;        // one line under it: "Comparing device.name"
  std::vector<Line> preamble;  // above the tables: the inputs, what differs
  std::vector<Table> tables;   // the first is the main one
  std::vector<Line> notes;     // below all tables: how to read them
  std::vector<Chart> charts;   // for formats that draw; in the order shown
  std::vector<Section> sections;
  nlohmann::json data;         // the model the tables came from (summary.json, the comparison); HTML never reads it
  const LoadedRun* run = nullptr;  // the run's reports, for formats that need each step
};

// A number as a cell: its value, and its text by `format`; when it is not a
// number, "-" for people and an empty field for machines.
inline TableCell number_cell(const std::optional<double>& v, const char* format, const std::string& suffix = "") {
  if (!v) return {"-", ""};
  return {fmt::format(fmt::runtime(format), *v) + suffix, *v};
}

}  // namespace ladder
