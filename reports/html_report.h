// reports/html_report.h: the comparison as one self-contained HTML page
// (`ladder compare ... --html`): a header naming the inputs and what differs
// between them, a table per rung with the verdicts, five inline-SVG charts
// (tokens/s, speedup over fp32, peak memory, per-step dt spread, and where
// a step's time goes: the op breakdown stacked per rung) and the
// environments side by side. No network: inline CSS, SVG and a tiny script
// that records each chart's rendered size for tests/check_html.py.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace ladder {

// `comparison` has the shape produced by compare_runs (reports/compare.h; see
// tests/fixtures/comparison.json). Missing or null fields render as "–";
// every string taken from the JSON is HTML-escaped.
std::string render_comparison_html(const nlohmann::json& comparison);

}  // namespace ladder
