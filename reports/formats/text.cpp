// reports/formats/text.cpp: the terminal format (`--format text`, the
// default): columns padded to their widest cell, verdicts and warnings in
// colour on a terminal.
#include <algorithm>

#include <fmt/format.h>

#include "reports/render/reporter.h"

namespace ladder {
namespace {

// Code points, not bytes: "–" and "…" take one column.
size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string paint(const std::string& s, Tone tone, bool color) {
  const char* code = tone == Tone::kGood ? "32" : tone == Tone::kBad ? "31" : tone == Tone::kWarn ? "33" : "";
  return color && *code && !s.empty() ? fmt::format("\033[{}m{}\033[0m", code, s) : s;
}

std::string line_text(const Line& l, bool color) {
  return l.lead.empty() ? l.text : paint(l.lead, l.tone, color) + " " + l.text;
}

// One row: each cell padded to its column's width; no trailing blanks.
std::string row_text(const std::vector<TableCell>& cells, const std::vector<Column>& cols,
                     const std::vector<size_t>& widths, bool color) {
  std::string out;
  for (size_t c = 0; c < cols.size(); ++c) {
    const TableCell cell = c < cells.size() ? cells[c] : TableCell{};
    const std::string pad(widths[c] - std::min(widths[c], display_width(cell.text)), ' ');
    const std::string painted = paint(cell.text, cell.tone, color);
    out += (c ? " " : "") + (cols[c].align == Align::kRight ? pad + painted : painted + pad);
  }
  return out.erase(out.find_last_not_of(' ') + 1) + "\n";
}

class TextReporter : public Reporter {
 public:
  std::string name() const override { return "text"; }
  bool renders(DocumentKind) const override { return true; }
  std::string render(const Document& doc, const RenderOptions& opts) const override {
    std::string out;
    for (const auto& l : doc.preamble) out += line_text(l, opts.color) + "\n";
    for (const auto& t : doc.tables) {
      out += "\n";
      if (!t.title.empty()) out += t.title + ":\n";
      std::vector<size_t> widths;
      std::vector<TableCell> header;
      for (const auto& col : t.columns) {
        widths.push_back(display_width(col.title()));
        header.push_back({col.title(), nullptr});
      }
      for (const auto& row : t.rows)
        for (size_t c = 0; c < row.cells.size() && c < widths.size(); ++c)
          widths[c] = std::max(widths[c], display_width(row.cells[c].text));
      out += row_text(header, t.columns, widths, false);
      for (const auto& row : t.rows)
        out += row.section.empty() ? row_text(row.cells, t.columns, widths, opts.color) : row.section + "\n";
      for (const auto& l : t.notes) out += line_text(l, opts.color) + "\n";
    }
    for (const auto& l : doc.notes) out += line_text(l, opts.color) + "\n";
    return out;
  }
};

}  // namespace

const Reporter& text_reporter() {
  static const TextReporter kReporter;
  return kReporter;
}

}  // namespace ladder
