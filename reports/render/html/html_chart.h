// reports/render/html/html_chart.h: one Chart (reports/render/chart.h) as inline SVG, for the
// HTML page (reports/render/html/html_report.h): grouped bars, lines over the categories
// with a dashed reference, per-category spreads of samples, or stacked bars
// of named layers; the title above, a legend, a y axis with round ticks, the
// categories below (rotated when they do not fit), a whisker where a value
// has an interval. Data shapes carry class "mark" (tests/e2e/check_html.py counts
// them). A chart without data is its title and its note, with no axes.
#pragma once

#include <string>

#include "reports/render/chart.h"

namespace ladder {

std::string chart_svg(const Chart& chart);

}  // namespace ladder
