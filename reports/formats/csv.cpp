// reports/formats/csv.cpp: `--format csv`, the document's main table for
// spreadsheets and scripts: one header line of column keys (with units,
// "dt_ms_median"), then one line per row of values, numbers at full
// precision (RFC 4180 quoting). CSV holds one table: the others, the
// section lines and the notes are left out.
#include <fmt/format.h>

#include "reports/render/reporter.h"

namespace ladder {
namespace {

std::string field(const TableCell& cell) {
  const nlohmann::json& v = cell.value;
  std::string s = v.is_null() ? cell.text : v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

class CsvReporter : public Reporter {
 public:
  std::string name() const override { return "csv"; }
  bool renders(DocumentKind) const override { return true; }
  std::string render(const Document& doc, const RenderOptions&) const override {
    if (doc.tables.empty()) return "";
    const Table& t = doc.tables.front();
    std::string out;
    for (size_t c = 0; c < t.columns.size(); ++c) out += (c ? "," : "") + field({t.columns[c].key, nullptr});
    out += "\n";
    for (const auto& row : t.rows) {
      if (!row.section.empty()) continue;
      for (size_t c = 0; c < t.columns.size(); ++c)
        out += (c ? "," : "") + (c < row.cells.size() ? field(row.cells[c]) : std::string());
      out += "\n";
    }
    return out;
  }
};

}  // namespace

const Reporter& csv_reporter() {
  static const CsvReporter kReporter;
  return kReporter;
}

}  // namespace ladder
