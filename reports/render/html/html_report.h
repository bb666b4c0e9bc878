// reports/render/html/html_report.h: any Document (reports/render/document.h) as one
// self-contained HTML page: `--format html` of `ladder compare` (also
// `--html`), `ladder run` and `ladder export`. The title and subtitle, the
// preamble's prose, the top sections (a comparison's inputs and what
// differs), forced differences and warnings in boxes, the charts as inline
// SVG (reports/render/html/html_chart.h; a chart without data shows its note), the
// sections after them (the largest kernels of each breakdown band), the
// tables with their notes, the document's notes, and the bottom sections
// (the environments). No network: inline CSS, SVG and a tiny script that
// records each chart's rendered size for tests/e2e/check_html.py.
#pragma once

#include <string>

#include "reports/render/document.h"

namespace ladder {

// Reads only the document's parts, never doc.data; every string is
// HTML-escaped.
std::string render_html(const Document& doc);

}  // namespace ladder
