// reports/render/html/html_report.cpp: see html_report.h. The page is the document's
// parts in a fixed order (header, top sections, boxed warnings, charts,
// after-chart sections, tables, notes, bottom sections), each part one
// function; the charts are reports/render/html/html_chart.cpp's. It reads nothing but the
// Document's parts: never its data (the model), so that what a page shows is
// what every format was given.
#include "reports/render/html/html_report.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "reports/render/html/html_chart.h"
#include "reports/render/html_escape.h"

namespace ladder {
namespace {

std::string swatch(const std::string& colour) {
  return fmt::format(R"(<span class="swatch" style="background:{}"></span>)", escape_html(colour));
}

// ` class="a b"` for the non-empty names, or "".
std::string class_attr(const std::string& a, const std::string& b = "") {
  const std::string both = a.empty() ? b : b.empty() ? a : a + " " + b;
  return both.empty() ? "" : " class=\"" + escape_html(both) + "\"";
}

const char* tone_class(Tone tone) {
  switch (tone) {
    case Tone::kGood: return "good";
    case Tone::kBad: return "bad";
    case Tone::kWarn: return "warn";
    case Tone::kPlain: break;
  }
  return "";
}

// A line as a paragraph: its lead in bold, then its text.
std::string line_html(const Line& l) {
  const std::string lead =
      l.lead.empty() ? "" : "<strong" + class_attr(tone_class(l.tone)) + ">" + escape_html(l.lead) + "</strong> ";
  return "<p" + class_attr("note", l.kind == LineKind::kWarning ? "warning" : "") + ">" + lead + escape_html(l.text) +
         "</p>";
}

std::string lines_html(const std::vector<Line>& lines) {
  std::string s;
  for (const auto& l : lines)
    if (l.kind != LineKind::kRestated) s += line_html(l);
  return s;
}

std::string cell_html(const TableCell& c, const Column& col) {
  std::string inner = escape_html(c.text);
  if (col.code && !c.text.empty()) inner = "<code>" + inner + "</code>";
  if (c.tone != Tone::kPlain && !c.text.empty())
    inner = "<span" + class_attr("tone", tone_class(c.tone)) + ">" + inner + "</span>";
  if (!c.swatch.empty()) inner = swatch(c.swatch) + inner;
  return "<td" + class_attr(col.align == Align::kRight ? "num" : "") + ">" + inner + "</td>";
}

// A table: its header row, its rows (a section line spans every column), the notes under it.
std::string table_html(const Table& t) {
  std::string s = "<table" + class_attr("doc", t.tag) + "><thead><tr>";
  for (const auto& col : t.columns)
    s += "<th" + class_attr(col.align == Align::kRight ? "num" : "") + ">" + escape_html(col.title()) + "</th>";
  s += "</tr></thead><tbody>";
  for (const auto& row : t.rows) {
    if (!row.section.empty()) {
      s += fmt::format(R"(<tr class="section"><td colspan="{}">{}</td></tr>)", t.columns.size(),
                       escape_html(row.section));
      continue;
    }
    s += "<tr" + class_attr(row.tag) + ">";
    for (size_t c = 0; c < t.columns.size(); ++c)
      s += cell_html(c < row.cells.size() ? row.cells[c] : TableCell{}, t.columns[c]);
    s += "</tr>";
  }
  return s + "</tbody></table>" + lines_html(t.notes);
}

// A section: its heading, its lines, and each table under its title (folded, when collapsed).
std::string section_html(const Section& sec) {
  std::string s = "<section" + class_attr(sec.tag) + ">";
  if (!sec.title.empty()) s += "<h2>" + escape_html(sec.title) + "</h2>";
  s += lines_html(sec.lines);
  for (const auto& t : sec.tables) {
    if (sec.collapsed)
      s += "<details" + class_attr(sec.tag) + "><summary>" + escape_html(t.title) + "</summary>" + table_html(t) +
           "</details>";
    else
      s += (t.title.empty() ? "" : "<h3>" + escape_html(t.title) + "</h3>") + table_html(t);
  }
  return s + "</section>";
}

std::string sections_html(const Document& doc, Placement where) {
  std::string s;
  for (const auto& sec : doc.sections)
    if (sec.placement == where) s += section_html(sec);
  return s;
}

// The title, the subtitle and the preamble's prose (its warnings are boxed below).
std::string header_html(const Document& doc) {
  std::string s = "<header><h1>" + escape_html(doc.title.empty() ? std::string("ladder") : doc.title) + "</h1>";
  if (!doc.subtitle.empty()) s += "<p class=\"subject-line\">" + escape_html(doc.subtitle) + "</p>";
  for (const auto& l : doc.preamble)
    if (l.kind == LineKind::kProse) s += line_html(l);
  return s + "</header>";
}

// The preamble's lines of one kind as a list in a box: forced differences, warnings.
std::string box_html(const Document& doc, LineKind kind, const char* css, const char* heading) {
  std::string items;
  for (const auto& l : doc.preamble)
    if (l.kind == kind) items += "<li>" + escape_html(l.text) + "</li>";
  if (items.empty()) return "";
  return fmt::format(R"(<div class="{}"><strong>{}</strong><ul>{}</ul></div>)", css, heading, items);
}

std::string charts_html(const Document& doc) {
  if (doc.charts.empty()) return "";
  std::string s = "<h2>Charts</h2>";
  for (const auto& c : doc.charts) s += chart_svg(c);
  return s;
}

std::string tables_html(const Document& doc) {
  if (doc.tables.empty()) return "";
  std::string s = "<h2>Tables</h2>";
  for (const auto& t : doc.tables)
    s += (t.title.empty() ? "" : "<h3>" + escape_html(t.title) + "</h3>") + table_html(t);
  return s;
}

constexpr const char* kStyle = R"(<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;background:#f6f8fa;margin:0}
main{max-width:1160px;margin:0 auto;padding:24px 28px;background:#fff;box-shadow:0 0 0 1px #d0d7de}
h1{font-size:26px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:14px 0 4px}
.subject-line{font-size:16px;margin:0 0 12px}.note{color:#57606a;margin:4px 0 10px}.note strong.warn{color:#9a6700}
table{border-collapse:collapse;margin:6px 0 12px}th,td{padding:4px 10px;border-bottom:1px solid #eaeef2;text-align:left}
th{background:#f6f8fa;font-weight:600;font-size:13px}td{font-variant-numeric:tabular-nums}
th.num,td.num{text-align:right}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,monospace}
.swatch{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:6px;vertical-align:-1px}
.forced{background:#ffebe9;border:1px solid #ff8182;border-radius:6px;padding:8px 14px;margin:10px 0}
.warnings{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 14px;margin:10px 0}
.forced ul,.warnings ul{margin:4px 0 0;padding-left:20px}
table.rungs{width:100%}table.rungs td:first-child{font-weight:600}
tr.peer td:first-child{color:#8250df}tr.section td{font-style:italic;color:#57606a;background:#f6f8fa}
.tone{padding:1px 8px;border-radius:10px;font-size:12.5px;white-space:nowrap}
.tone.good{background:#dafbe1;color:#116329}.tone.bad{background:#ffebe9;color:#a40e26}
.tone.warn{background:#fff8c5;color:#7d4e00}
table.environment td,table.subject td{overflow-wrap:anywhere}
table.environment td:first-child,table.subject td:first-child{white-space:nowrap}
tr.differs td{background:#fff8c5}tr.differs td:first-child{box-shadow:inset 3px 0 #d4a72c}
svg.chart{display:block;max-width:100%;height:auto;margin:8px 0 20px;font-family:system-ui,sans-serif}
svg .chart-title{font-size:15px;font-weight:600;fill:#1f2328}svg .tick,svg .band,svg .legend{font-size:12px;fill:#424a53}
svg .axis-title{font-size:12px;fill:#57606a}svg .value{font-size:10.5px;fill:#424a53}svg .na{font-size:12px;fill:#8c959f}
svg .empty-note{font-size:13px;fill:#57606a;font-style:italic}
svg .grid{stroke:#eaeef2}svg .axis{stroke:#8c959f}svg .reference{stroke:#8c959f;stroke-dasharray:5 4}
svg .series{fill:none;stroke-width:2.5}svg .box{fill-opacity:.22}svg .median{stroke-width:2.5}
svg .whisker{stroke-width:1.3}svg .interval{stroke-width:1.6}svg .sample{fill-opacity:.6}svg .end{font-size:12px;font-weight:600}
details.breakdown-top{margin:2px 0}details.breakdown-top summary{cursor:pointer;font-weight:600}
table.breakdown-top code{overflow-wrap:anywhere}
#render-check{display:none}section.footer .note{color:#8c959f;font-size:12px;margin-top:24px}
</style>)";

// Records each chart's rendered size and mark counts; tests/e2e/check_html.py reads them from the DOM.
constexpr const char* kRenderCheckScript = R"(<script>
window.addEventListener('load', function () {
  var lines = [];
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    var size = Math.round(box.width) + 'x' + Math.round(box.height);
    svg.setAttribute('data-rendered', size);
    lines.push(svg.id + ' ' + size + ' marks=' + svg.querySelectorAll('.mark').length);
  });
  document.getElementById('render-check').textContent = lines.join('\n');
});
</script>)";

}  // namespace

std::string render_html(const Document& doc) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
         escape_html(doc.title.empty() ? std::string("ladder") : doc.title) + "</title>" + kStyle +
         "</head><body><main>" + header_html(doc) + sections_html(doc, Placement::kTop) +
         box_html(doc, LineKind::kForced, "forced",
                  "Compared with --force although the inputs measured different things:") +
         box_html(doc, LineKind::kWarning, "warnings", "Warnings:") + charts_html(doc) +
         sections_html(doc, Placement::kAfterCharts) + tables_html(doc) + lines_html(doc.notes) +
         sections_html(doc, Placement::kBottom) + "<pre id=\"render-check\"></pre>" + kRenderCheckScript +
         "</main></body></html>\n";
}

}  // namespace ladder
