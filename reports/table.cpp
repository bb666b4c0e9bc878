// reports/table.cpp: see table.h.
#include "reports/table.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/figure_charts.h"
#include "reports/json_fields.h"
#include "reports/peer_cells.h"
#include "reports/reporter.h"
#include "reports/run_figures.h"

namespace ladder {

using nlohmann::json;

namespace {
std::string shape_key(const json& row) {
  return fmt::format("{}|{}|{}", row.value("preset", ""), row.value("batch", 0), row.value("seq", 0));
}
}  // namespace

void add_speedups(json& rows) {
  std::map<std::string, double> fp32, previous;
  for (auto& row : rows)
    if (row["rung"] == "fp32" && row["status"] == "ok") fp32[shape_key(row)] = row["tokens_per_s_median"];
  for (auto& row : rows) {
    if (row["status"] != "ok") continue;
    const std::string key = shape_key(row);
    const double tok_s = row["tokens_per_s_median"];
    row["speedup_vs_fp32"] = fp32.count(key) ? json(tok_s / fp32[key]) : json();
    if (row.contains("peer")) {
      row["speedup_vs_previous"] = nullptr;  // a peer is not the next rung of the ladder
      continue;
    }
    row["speedup_vs_previous"] = previous.count(key) ? json(tok_s / previous[key]) : json();
    previous[key] = tok_s;
  }
}

void add_peer_ratios(json& rows, const std::string& base_rung) {
  std::map<std::string, double> base;
  for (const auto& row : rows)
    if (!row.contains("peer") && row["rung"] == base_rung && row["status"] == "ok")
      base[shape_key(row)] = row["tokens_per_s_median"];
  for (auto& row : rows) {
    if (!row.contains("peer") || row["status"] != "ok") continue;
    const std::string key = shape_key(row);
    const double peer = row["tokens_per_s_median"];
    row["ladder_vs_peer"] = {{"rung", base_rung},
                             {"tokens_per_s_ratio", base.count(key) ? json(base[key] / peer) : json()},
                             {"note", base.count(key) ? fmt::format("tokens/s of ladder {} over this peer's", base_rung)
                                                      : fmt::format("no ok {} row of this shape in the run", base_rung)}};
  }
}

std::string roofline_figures(const json& roofline) {
  std::string figures;
  for (const auto& [name, e] : roofline.at("precisions").items())
    figures += fmt::format("{}{} {:.3g}", figures.empty() ? "" : ", ", name, e.value("matmul_tflops", 0.0));
  return figures;
}

namespace {

// The run table's columns: the rung and its status, every figure shown in
// the run table (reports/run_figures.cpp) with the speedups after tokens/s,
// then the parity verdict and, for a row that did not run, why.
std::vector<Column> run_columns() {
  std::vector<Column> cols = {{"rung", "rung", "", Align::kLeft}, {"status", "status", "", Align::kLeft}};
  for (const RunFigure& f : run_figures()) {
    if (!(f.shown & kRunTable)) continue;
    cols.push_back(figure_column(f));
    if (std::string(f.key) == "tokens_per_s_median") {
      cols.push_back({"speedup_vs_fp32", "x fp32", ""});
      cols.push_back({"speedup_vs_previous", "x prev", ""});
    }
  }
  cols.push_back({"parity", "parity", "", Align::kLeft});
  cols.push_back({"reason", "reason", "", Align::kLeft});
  return cols;
}

// "pass gnorm 3.3e-03<=2e-02": the verdict, the quantity that decided and its value.
TableCell parity_cell(const json& row) {
  const json& parity = row["parity"];
  std::string verdict = parity.value("status", "");
  if (row.contains("peer")) verdict = "not checked (peer)";
  if (parity.contains("worst_quantity")) {
    const json& worst = parity["worst_rel_diff"];
    const double rtol = parity["rtol"].get<double>();
    verdict += fmt::format(" {} {}{}{:.0e}", parity["worst_quantity"] == "grad_norm" ? "gnorm" : "loss",
                           worst.is_null() ? std::string("nan") : fmt::format("{:.1e}", worst.get<double>()),
                           !worst.is_null() && worst.get<double>() <= rtol ? "<=" : ">", rtol);
  }
  const Tone tone = verdict.rfind("fail", 0) == 0 ? Tone::kBad : row.contains("peer") ? Tone::kWarn : Tone::kGood;
  return {verdict, nullptr, tone};
}

Row ok_row(const json& row, const std::string& name) {
  Row r;
  r.cells = {{name, nullptr}, {row["status"].get<std::string>(), nullptr}};
  const json markers = row.value("markers", json::object());
  for (const RunFigure& f : run_figures()) {
    if (!(f.shown & kRunTable)) continue;
    r.cells.push_back(figure_cell(f, row.value(f.key, json()), markers.value(f.key, "")));
    if (std::string(f.key) == "tokens_per_s_median") {
      r.cells.push_back(number_cell(row.value("speedup_vs_fp32", json()), "{:.2f}"));
      r.cells.push_back(number_cell(row.value("speedup_vs_previous", json()), "{:.2f}"));
    }
  }
  r.cells.push_back(parity_cell(row));
  r.cells.push_back({"", ""});
  return r;
}

// A row that did not run or failed: its status and why, the figures blank.
Row failed_row(const json& row, const std::string& name, size_t n_columns) {
  std::string why = row.value("reason", "");
  if (row.contains("failure")) why = row["failure"].value("reason", "") + " " + row["failure"].value("message", "");
  Row r;
  r.cells = {{name, nullptr}, {row["status"].get<std::string>(), nullptr, Tone::kBad}};
  r.cells.resize(n_columns - 1, TableCell{"", ""});
  r.cells.push_back({why.substr(0, 90), why});
  return r;
}

Table run_table(const json& summary) {
  Table t;
  t.columns = run_columns();
  bool peers_header = false;
  for (const auto& row : summary["rows"]) {
    const std::string name = peer_display_name(row["cell"].get<std::string>());
    if (row.contains("peer") && !peers_header) {
      peers_header = true;
      t.rows.push_back({{}, fmt::format("-- peers: PyTorch, the same model and switches as {}, each in its own Python "
                                        "process (not in loss parity) --",
                                        summary.value("peers", json::object()).value("compared_with", kPeerBaseRung))});
    }
    t.rows.push_back(row["status"] == "ok" ? ok_row(row, name) : failed_row(row, name, t.columns.size()));
  }
  return t;
}

// "ladder fused-adamw 0.79x of compile": each peer beside the top single-process rung.
std::string peer_ratios(const json& summary) {
  std::string ratios;
  for (const auto& row : summary["rows"]) {
    if (!row.contains("ladder_vs_peer") || !row["ladder_vs_peer"]["tokens_per_s_ratio"].is_number()) continue;
    const std::string cell = row["cell"].get<std::string>();
    const size_t slash = cell.rfind('/');
    ratios += fmt::format("{}{}{} {:.2f}x of {}", ratios.empty() ? "" : ", ",
                          slash == std::string::npos ? "" : cell.substr(0, slash + 1),
                          row["ladder_vs_peer"]["rung"].get<std::string>(),
                          row["ladder_vs_peer"]["tokens_per_s_ratio"].get<double>(), row["peer"].value("name", "?"));
  }
  return ratios;
}

// The ok rows (by display name) for which `pick` holds, "a, b, c".
template <class F>
std::string rows_where(const json& summary, F pick) {
  std::string names;
  for (const auto& row : summary["rows"])
    if (row.value("status", "") == "ok" && pick(row))
      names += fmt::format("{}{}", names.empty() ? "" : ", ", peer_display_name(row["cell"].get<std::string>()));
  return names;
}

// Numeric switches that did not take effect on this device, one line each:
// their rungs ran the previous precision, and the table's speedups show only
// what their other switches bought.
void not_effective_notes(const json& summary, std::vector<Line>& notes) {
  auto not_effective = [&](const char* numeric) {
    return rows_where(summary, [&](const json& row) {
      return row.contains("effective") && row["effective"].contains(numeric) && !row["effective"][numeric].get<bool>();
    });
  };
  if (const std::string rungs = not_effective("tf32"); !rungs.empty())
    notes.push_back({fmt::format("tf32: not effective in {}: no reduced-precision fp32 matmul mode on this device "
                                 "(see switches.tf32.reason); those rungs ran fp32",
                                 rungs)});
  if (const std::string rungs = not_effective("bf16"); !rungs.empty()) {
    const json roofline = summary.value("roofline", json::object());
    const json bf16 =
        roofline.contains("precisions") ? roofline["precisions"].value("bf16", json::object()) : json::object();
    notes.push_back({fmt::format("not effective in {}: {}; their matmuls ran in fp32 (--cpu-bf16 auto; 'on' forces bf16)",
                                 rungs,
                                 bf16.contains("emulated_evidence")
                                     ? "this CPU emulates bf16 matmuls (" + bf16["emulated_evidence"].get<std::string>() + ")"
                                     : std::string("see each report's switches.bf16.reason")),
                     "bf16:", Tone::kWarn});
  }
}

// Rows whose dt moved more than a quiet machine's (the noise verdict,
// bench/summary_rows.cpp), with their CVs, and 'p' MFU above 100 % (a
// roofline probe that ran slow).
void noise_notes(const json& summary, std::vector<Line>& notes) {
  std::string noisy;
  double cv_limit = 0;
  for (const auto& row : summary["rows"]) {
    const json noise = row.value("noise", json::object());
    if (row.value("status", "") != "ok" || !noise.contains("quiet") || noise["quiet"].get<bool>()) continue;
    cv_limit = noise["cv_limit"].get<double>();
    noisy += fmt::format("{}{} (steps {:.1f} %{})", noisy.empty() ? "" : ", ",
                         peer_display_name(row["cell"].get<std::string>()), 100 * noise["steps_cv"].get<double>(),
                         noise["processes_cv"].is_number()
                             ? fmt::format(", processes {:.1f} %", 100 * noise["processes_cv"].get<double>())
                             : std::string());
  }
  if (!noisy.empty())
    notes.push_back({fmt::format("dt varied more than a quiet machine's {:.0f} % (CV) in {}: the machine was busy while "
                                 "they ran, so differences of that size between runs are not findings; rerun them "
                                 "(with --repeat)",
                                 100 * cv_limit, noisy),
                     "noise:", Tone::kWarn});
  const std::string over = rows_where(summary, [](const json& row) {
    return row.value("markers", json::object()).value("mfu_pct", "") == "p" && row["mfu_pct"].is_number() &&
           row["mfu_pct"].get<double>() > 100;
  });
  if (!over.empty())
    notes.push_back({fmt::format("'p' MFU above 100 % in {}: the run's roofline probe ran slow (see roofline.json's "
                                 "tflops_per_round)",
                                 over),
                     "roofline:", Tone::kWarn});
}

std::vector<Line> run_notes(const json& summary, const std::string& summary_path) {
  std::vector<Line> notes;
  if (const std::string ratios = peer_ratios(summary); !ratios.empty())
    notes.push_back({fmt::format("ladder {} (tokens/s; above 1 ladder is faster)", ratios), "peers:"});
  if (const int repeats = summary.value("repeats", 1); repeats > 1)
    notes.push_back({fmt::format("figures: the median of {} per-process medians (--repeat {}, interleaved); peak: the "
                                 "largest process's",
                                 repeats, repeats)});
  const json roofline = summary.value("roofline", json::object());
  if (roofline.value("status", "") == "ok")
    notes.push_back({fmt::format("roofline ('p'): {} TFLOP/s on {}, measured once for the run before the rungs",
                                 roofline_figures(roofline), roofline.value("device", "?"))});
  else if (roofline.contains("reason"))
    notes.push_back({fmt::format("roofline ('p'): {}; each rung probed its own", roofline.value("reason", ""))});
  not_effective_notes(summary, notes);
  noise_notes(summary, notes);
  notes.push_back({"MFU %: against the datasheet peak; 'p' marks MFU against the measured matmul roofline at the "
                   "rung's precision (no datasheet entry). ops/step: CUDA kernels, or aten:: ops on CPU."});
  notes.push_back({"parity: the larger relative difference to the reference over the first steps, of the loss (loss) "
                   "or the gradient norm (gnorm), against the rung's tolerance."});
  if (summary.contains("missing") && !summary["missing"].empty())
    notes.push_back({fmt::format("{} cell(s) missing ({}): {}", summary["missing"].size(),
                                 summary.value("status", "") == "stopped" ? "the run stopped" : "interrupted",
                                 summary["missing"].dump())});
  if (summary.contains("stopped_because") && summary["stopped_because"].is_string())
    notes.push_back({"the run stopped " + summary["stopped_because"].get<std::string>()});
  notes.push_back({"summary: " + summary_path});
  return notes;
}

// The run's charts, per rung: each figure with a chart title (tokens/s, peak
// memory) and the speedup over fp32 (reports/figure_charts.h); the run is
// the one series. Read defensively, as a page must not fail on an odd row.
std::vector<Chart> run_charts(const json& summary) {
  using namespace json_fields;
  std::vector<std::string> rungs;
  std::vector<const json*> rows;
  for (const auto& row : array_at(summary, "rows")) {
    rungs.push_back(peer_display_name(text(row, "cell", text(row, "rung"))));
    rows.push_back(&row);
  }
  return figure_charts(rungs, {text(summary, "run_id", "run")}, {rows}, "this run");
}

// "ladder run: <run id>", and how it ended.
void add_titles(const json& summary, Document& doc) {
  using namespace json_fields;
  doc.title = "ladder run: " + text(summary, "run_id", "(no run id)");
  doc.subtitle = text(summary, "status", "unfinished") + " run";
  if (const std::string at = text(summary, "started_at", ""); !at.empty()) doc.subtitle += ", started " + at;
  if (const std::string at = text(summary, "finished_at", ""); !at.empty()) doc.subtitle += ", finished " + at;
}

}  // namespace

Document run_document(const json& summary, const std::string& summary_path) {
  Document doc;
  doc.kind = DocumentKind::kRun;
  doc.data = summary;
  doc.tables.push_back(run_table(summary));
  doc.notes = run_notes(summary, summary_path);
  add_titles(summary, doc);
  doc.charts = run_charts(summary);
  return doc;
}

void print_summary_table(const json& summary, const std::string& summary_path, const std::string& format) {
  const Reporter& reporter = find_reporter("--format", format, DocumentKind::kRun);
  Document doc = run_document(summary, summary_path);
  std::optional<LoadedRun> run;
  if (reporter.needs_reports()) {  // the run directory's reports, as `ladder export` reads them
    if (!std::filesystem::exists(summary_path)) {
      fmt::print(stderr, "ladder: --format {}: no summary.json to read the reports beside\n", format);
      return;
    }
    run = load_run(std::filesystem::path(summary_path).parent_path().string(), "A");
    doc.run = &*run;
  }
  fmt::print("{}", reporter.render(doc, {isatty(STDOUT_FILENO) != 0}));
}

}  // namespace ladder
