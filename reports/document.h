// reports/document.h: what `ladder run`, `ladder compare` and `ladder export`
// produce, before any output format: titled tables of typed columns, whose
// cells hold a value (the number, for machines) and its display text (for
// people), plus lines above and below them. Each format (reports/reporter.h)
// renders a Document; none of them knows which command made it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/report_loader.h"

namespace ladder {

enum class Align { kLeft, kRight };

// How a terminal may colour a cell or a line's lead; other formats ignore it.
enum class Tone { kPlain, kGood, kBad, kWarn };

struct Column {
  std::string key;     // machine name with its unit: CSV's header, "dt_ms_median"
  std::string header;  // what people read: "dt_ms", "x fp32"
  std::string unit;    // shown after the header when not already in it: "GiB"
  Align align = Align::kRight;
  std::string title() const { return unit.empty() ? header : header + " " + unit; }
};

struct TableCell {
  TableCell(std::string text = "", nlohmann::json value = nullptr, Tone tone = Tone::kPlain)
      : text(std::move(text)), value(std::move(value)), tone(tone) {}
  std::string text;      // as displayed: "12.34", "12.3p", "" for a repeated rung name
  nlohmann::json value;  // as machines read it: 12.3412..., "fp32"; null: use text
  Tone tone;
};

// A row of cells, one per column; or, when `section` is set, a line that
// opens a group of rows ("-- peers: ... --").
struct Row {
  Row(std::vector<TableCell> cells = {}, std::string section = "")
      : cells(std::move(cells)), section(std::move(section)) {}
  std::vector<TableCell> cells;
  std::string section;
};

// A line of prose: an optional lead ("noise:") that a terminal may colour,
// then the text.
struct Line {
  Line(std::string text, std::string lead = "", Tone tone = Tone::kPlain)
      : text(std::move(text)), lead(std::move(lead)), tone(tone) {}
  std::string text;
  std::string lead;
  Tone tone;
  std::string full() const { return lead.empty() ? text : lead + " " + text; }
};

struct Table {
  std::string title;  // "" for a document's main table
  std::vector<Column> columns;
  std::vector<Row> rows;
  std::vector<Line> notes;  // directly under the table
};

// What a document is of; a format may render only some kinds.
enum class DocumentKind {
  kRun,         // one run: its summary table (`ladder run`, `ladder export`)
  kComparison,  // `ladder compare`'s model (reports/compare.h)
};

struct Document {
  DocumentKind kind = DocumentKind::kRun;
  std::vector<Line> preamble;  // above the tables: the inputs, what differs
  std::vector<Table> tables;   // the first is the main one
  std::vector<Line> notes;     // below all tables: how to read them
  nlohmann::json data;         // the model the tables came from (summary.json, the comparison)
  const LoadedRun* run = nullptr;  // the run's reports, for formats that need each step
};

// A number as a cell: its value, and its text by `format`; when it is not a
// number, "-" for people and an empty field for machines.
inline TableCell number_cell(const nlohmann::json& v, const char* format, const std::string& suffix = "") {
  if (!v.is_number()) return {"-", ""};
  return {fmt::format(fmt::runtime(format), v.get<double>()) + suffix, v};
}

}  // namespace ladder
