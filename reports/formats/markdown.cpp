// reports/formats/markdown.cpp: `--format markdown` (or md), for notes and
// pull requests: the lines above the tables in a code block, each table as
// a GitHub table (numbers right-aligned, section lines in italics), and the
// notes as paragraphs.
#include "reports/render/reporter.h"

namespace ladder {
namespace {

std::string escape(const std::string& s) {  // a '|' would end the cell
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

class MarkdownReporter : public Reporter {
 public:
  std::string name() const override { return "markdown"; }
  std::vector<std::string> aliases() const override { return {"md"}; }
  bool renders(DocumentKind) const override { return true; }
  std::string render(const Document& doc, const RenderOptions&) const override {
    std::string out = doc.preamble.empty() ? "" : "```\n";
    for (const auto& l : doc.preamble) out += l.full() + "\n";
    if (!doc.preamble.empty()) out += "```\n\n";
    for (const auto& t : doc.tables) {
      if (!t.title.empty()) out += "**" + escape(t.title) + "**\n\n";
      std::string rule;
      for (const auto& col : t.columns) {
        out += "| " + escape(col.title()) + " ";
        rule += col.align == Align::kRight ? "|---:" : "|---";
      }
      out += "|\n" + rule + "|\n";
      for (const auto& row : t.rows) {
        for (size_t c = 0; c < t.columns.size(); ++c) {
          const std::string text = !row.section.empty() ? (c == 0 ? "*" + row.section + "*" : "")
                                   : c < row.cells.size() ? row.cells[c].text : "";
          out += "| " + escape(text) + " ";
        }
        out += "|\n";
      }
      out += "\n";
      for (const auto& l : t.notes) out += l.full() + "\n\n";
    }
    for (const auto& l : doc.notes) out += l.full() + "\n\n";
    return out;
  }
};

}  // namespace

const Reporter& markdown_reporter() {
  static const MarkdownReporter kReporter;
  return kReporter;
}

}  // namespace ladder
