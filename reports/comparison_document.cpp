// reports/comparison_document.cpp: the comparison (compare_runs's model,
// reports/compare.h) as a Document: the lines above the tables, one row per
// rung and input with its verdict, and the ladder's shape.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/compare.h"
#include "reports/peer_cells.h"
#include "reports/run_figures.h"

namespace ladder {

using nlohmann::json;

namespace {

// The inputs, what differs between them, forced differences and warnings:
// the lines above the tables.
std::vector<Line> header_lines(const json& cmp) {
  std::vector<Line> h;
  for (const auto& in : cmp["inputs"])
    h.push_back({fmt::format("{}: {} (run {}, {}; {})", in["label"].get<std::string>(), in["path"].get<std::string>(),
                             in["run_id"].get<std::string>(), in["device"].is_string() ? in["device"].get<std::string>() : "?",
                             in["processes_per_rung"].get<int>() > 1
                                 ? fmt::format("{} processes per rung: medians of per-process medians",
                                               in["processes_per_rung"].get<int>())
                                 : "one process per rung: medians of its steps")});
  if (cmp["subject"].empty()) {
    h.push_back({"subject: same environment (an A/A comparison)"});
  } else {
    h.push_back({"subject (what differs):"});
    for (const auto& [k, v] : cmp["subject"].items()) {
      std::string vals;
      for (const auto& x : v) vals += (vals.empty() ? "" : " | ") + (x.is_string() ? x.get<std::string>() : x.dump());
      h.push_back({fmt::format("  {}: {}", k, vals)});
    }
  }
  for (const auto& f : cmp["forced_differences"]) h.push_back({"FORCED: " + f.get<std::string>()});
  for (const auto& w : cmp["warnings"]) h.push_back({"warning: " + w.get<std::string>()});
  return h;
}

Tone verdict_tone(const std::string& verdict) {
  if (verdict.rfind("faster", 0) == 0) return Tone::kGood;
  if (verdict.rfind("slower", 0) == 0) return Tone::kBad;
  return verdict == "missing" || verdict == "too few samples" ? Tone::kWarn : Tone::kPlain;
}

// Under the rung table: each input's geomean, and what "peer:" rows are.
std::vector<Line> rung_table_notes(const json& cmp) {
  std::vector<Line> notes;
  for (size_t i = 1; i < cmp["geomean"].size(); ++i) {
    const json& g = cmp["geomean"][i];
    if (g.is_null()) continue;
    notes.push_back({fmt::format("geomean tokens/s ratio {} / baseline: {:.3f} over {} rungs",
                                 cmp["inputs"][i]["label"].get<std::string>(), g["ratio_tokens_per_s"].get<double>(),
                                 g["rungs"].get<int>())});
  }
  for (const auto& row : cmp["rungs"])
    if (row.value("peer", false)) {
      notes.push_back({fmt::format("peer:<name>: a PyTorch peer (scripts/peer.py) with {}'s switches, measured "
                                   "in the same run as the rungs; not a rung: outside the geomean and loss parity",
                                   kPeerBaseRung)});
      break;
    }
  return notes;
}

// One row per rung x input: each input's figures (the run-level figures shown
// in compare's table, reports/run_figures.cpp) and its verdict against the baseline.
Table rung_table(const json& cmp) {
  Table t;
  t.columns = {{"rung", "rung", "", Align::kLeft}, {"input", "input", "", Align::kLeft},
               {"status", "status", "", Align::kLeft}};
  for (const RunFigure& f : run_figures())
    if (f.shown & kCompareTable) t.columns.push_back(figure_column(f));
  t.columns.push_back({"ratio_tokens_per_s", "x base", ""});
  t.columns.push_back({"p_value", "p", ""});
  t.columns.push_back({"verdict", "verdict", "", Align::kLeft});
  for (const auto& row : cmp["rungs"]) {
    for (size_t i = 0; i < row["inputs"].size(); ++i) {
      const json& in = row["inputs"][i];
      const json& v = row["vs_baseline"][i];
      Row r;
      r.cells = {{i == 0 ? row["rung"].get<std::string>() : "", row["rung"]},
                 {cmp["inputs"][i]["label"].get<std::string>(), nullptr},
                 {in["status"].get<std::string>(), nullptr}};
      const json markers = in.value("markers", json::object());
      for (const RunFigure& f : run_figures())
        if (f.shown & kCompareTable) r.cells.push_back(figure_cell(f, in.value(f.key, json()), markers.value(f.key, "")));
      if (v.is_null()) {
        r.cells.resize(t.columns.size(), TableCell{"", ""});
      } else {
        std::string verdict = v["verdict"];
        if (v.contains("change_pct")) verdict += fmt::format(" ({:+.2f} %)", v["change_pct"].get<double>());
        r.cells.push_back(number_cell(v.value("ratio_tokens_per_s", json()), "{:.3f}"));
        r.cells.push_back(number_cell(v.value("p_holm", json()), "{:.3g}"));
        r.cells.push_back({verdict, nullptr, verdict_tone(verdict)});
      }
      t.rows.push_back(r);
    }
  }
  t.notes = rung_table_notes(cmp);
  return t;
}

// Each input's speedup over its own fp32, side by side, and its ratio to the baseline's.
Table shape_table(const json& cmp) {
  Table t;
  t.title = "ladder shape (speedup over each input's own fp32)";
  t.columns.push_back({"rung", "rung", "", Align::kLeft});
  const std::string base = cmp["inputs"][0]["label"];
  for (const auto& in : cmp["inputs"])
    t.columns.push_back({"speedup_vs_fp32_" + in["label"].get<std::string>(), "x fp32 " + in["label"].get<std::string>(), ""});
  for (size_t i = 1; i < cmp["inputs"].size(); ++i) {
    const std::string label = cmp["inputs"][i]["label"];
    t.columns.push_back({"ratio_" + label + "_to_" + base, label + "/" + base, ""});
  }
  for (const auto& s : cmp["ladder_shape"]) {
    Row r;
    r.cells.push_back({s["rung"].get<std::string>(), nullptr});
    for (const auto& x : s["speedup_vs_fp32"]) r.cells.push_back(number_cell(x, "{:.2f}"));
    for (size_t i = 1; i < s["ratio_to_baseline"].size(); ++i)
      r.cells.push_back(number_cell(s["ratio_to_baseline"][i], "{:.2f}"));
    t.rows.push_back(r);
  }
  return t;
}

}  // namespace

Document comparison_document(const json& cmp) {
  Document doc;
  doc.kind = DocumentKind::kComparison;
  doc.data = cmp;
  doc.preamble = header_lines(cmp);
  doc.tables = {rung_table(cmp), shape_table(cmp)};
  doc.notes.push_back({fmt::format("faster/slower: p < {} and a median dt change of at least {} % (--noise-threshold); "
                                   "otherwise within noise. p: Welch's t over per-process medians when both inputs "
                                   "have 2+ processes, else Mann-Whitney U over steps; Holm-adjusted over the rungs "
                                   "compared. MFU 'p' = against the measured roofline",
                                   cmp["alpha"].get<double>(), cmp["noise_threshold_pct"].get<double>())});
  return doc;
}

}  // namespace ladder
