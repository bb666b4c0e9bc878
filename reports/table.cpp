// reports/table.cpp: see table.h.
#include "reports/table.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/bands.h"
#include "reports/figure_charts.h"
#include "reports/json_fields.h"
#include "reports/peer_cells.h"
#include "reports/reporter.h"
#include "reports/block_design.h"
#include "reports/inference.h"
#include "reports/run_figures.h"

namespace ladder {

using nlohmann::json;

namespace {
// The rows whose ratios go together: one shape of the matrix, on one side.
std::string shape_key(const json& row) {
  return fmt::format("{}|{}|{}|{}", row.value("side", ""), row.value("preset", ""), row.value("batch", 0),
                     row.value("seq", 0));
}
}  // namespace

namespace {

// Every ok row's per-process tokens/s of one shape, by round: the block
// design the ratios between a run's cells come from (reports/block_design.h).
std::map<std::string, BlockDesign> designs_by_shape(const json& rows) {
  std::map<std::string, BlockDesign> designs;
  for (const auto& row : rows) {
    if (row.value("status", "") != "ok") continue;
    const json values = row.value("per_process", json::object()).value("tokens_per_s_median", json::array());
    const json rounds = row.value("rounds", json::array());
    for (size_t k = 0; k < values.size(); ++k)
      if (values[k].is_number() && values[k].get<double>() > 0)
        designs[shape_key(row)].add(row["cell"].get<std::string>(),
                                    k < rounds.size() ? rounds[k].get<int>() : int(k) + 1, values[k].get<double>());
    if (values.empty())  // a row of an older summary: its one value
      designs[shape_key(row)].add(row["cell"].get<std::string>(), 1, row["tokens_per_s_median"].get<double>());
  }
  return designs;
}

// row[key] = the ratio, row[key + "_interval"] = [lo, hi] or null, and
// row[key + "_against"] = the cell it is against ("": none).
void set_ratio(json& row, const std::string& key, const RatioInterval& r, const std::string& against = "") {
  row[key] = r.ratio > 0 ? json(r.ratio) : json();
  row[key + "_interval"] = r.has_interval() ? json::array({r.lo, r.hi}) : json();
  row[key + "_against"] = r.ratio > 0 && !against.empty() ? json(against) : json();
}

// A row's cell id without its side ("B/fp32" -> "fp32").
std::string bare_cell(const json& row) {
  const std::string cell = row["cell"].get<std::string>(), side = row.value("side", "");
  return side.empty() ? cell : cell.substr(side.size() + 1);
}

}  // namespace

void add_speedups(json& rows) {
  auto designs = designs_by_shape(rows);
  std::map<std::string, std::string> fp32, previous;  // shape -> cell
  std::map<std::string, std::string> by_rung;         // shape|rung -> cell
  for (const auto& row : rows) {
    if (row["status"] != "ok") continue;
    if (row["rung"] == "fp32") fp32[shape_key(row)] = row["cell"].get<std::string>();
    by_rung[shape_key(row) + "|" + row.value("rung", "")] = row["cell"].get<std::string>();
  }
  for (auto& row : rows) {
    if (row["status"] != "ok") continue;
    const std::string key = shape_key(row), cell = row["cell"].get<std::string>();
    const BlockDesign& d = designs[key];
    set_ratio(row, "speedup_vs_fp32", fp32.count(key) && fp32[key] != cell ? d.ratio(fp32[key], cell) : RatioInterval{},
              fp32.count(key) ? bare_cell({{"cell", fp32[key]}, {"side", row.value("side", "")}}) : "");
    if (fp32.count(key) && fp32[key] == cell) row["speedup_vs_fp32"] = 1.0;
    if (row.contains("peer")) {
      set_ratio(row, "speedup_vs_previous", {});  // a peer is not the next rung of the ladder
      continue;
    }
    // A composite RUNG+SWITCH is against RUNG where RUNG ran (ddp+zero1
    // against ddp, not the row above it); any other rung against the row above.
    const std::string rung = row.value("rung", "");
    const size_t plus = rung.find('+');
    const std::string base = plus == std::string::npos ? "" : key + "|" + rung.substr(0, plus);
    const std::string against = !base.empty() && by_rung.count(base) ? by_rung[base]
                                : previous.count(key)                 ? previous[key]
                                                                      : std::string();
    set_ratio(row, "speedup_vs_previous", against.empty() ? RatioInterval{} : d.ratio(against, cell),
              against.empty() ? "" : bare_cell({{"cell", against}, {"side", row.value("side", "")}}));
    previous[key] = cell;
  }
}

void add_ablation_effects(json& rows) {
  auto designs = designs_by_shape(rows);
  std::map<std::string, std::string> top;  // shape -> the top rung's cell
  for (const auto& row : rows)
    if (row["rung"] == "top" && row["status"] == "ok") top[shape_key(row)] = row["cell"].get<std::string>();
  for (auto& row : rows) {
    const std::string rung = row.value("rung", "");
    const bool left_out = rung.rfind("top-", 0) == 0, added = rung.rfind("top+", 0) == 0;
    if (row["status"] != "ok" || (!left_out && !added)) continue;
    const std::string key = shape_key(row), cell = row["cell"].get<std::string>();
    if (!top.count(key)) continue;
    // What X buys at the top: top over top-X, or top+X over top for an extra.
    const RatioInterval r = left_out ? designs[key].ratio(cell, top[key]) : designs[key].ratio(top[key], cell);
    set_ratio(row, "effect_at_top", r, bare_cell({{"cell", top[key]}, {"side", row.value("side", "")}}));
  }
}

void add_side_ratios(json& rows) {
  std::map<std::string, const json*> side_a;  // A's rows by their bare cell
  for (const auto& row : rows)
    if (row.value("side", "") == "A" && row["status"] == "ok") side_a[bare_cell(row)] = &row;
  for (auto& row : rows) {
    if (row.value("side", "") != "B" || row["status"] != "ok" || !side_a.count(bare_cell(row))) continue;
    const json& a = *side_a[bare_cell(row)];
    // Paired by round: the two sides of a round ran back to back.
    std::map<int, double> a_by_round;
    const json a_values = a["per_process"]["tokens_per_s_median"], a_rounds = a["rounds"];
    for (size_t k = 0; k < a_values.size(); ++k)
      if (a_values[k].is_number()) a_by_round[a_rounds[k].get<int>()] = a_values[k].get<double>();
    std::vector<double> av, bv;
    const json b_values = row["per_process"]["tokens_per_s_median"], b_rounds = row["rounds"];
    for (size_t k = 0; k < b_values.size(); ++k)
      if (b_values[k].is_number() && a_by_round.count(b_rounds[k].get<int>())) {
        av.push_back(a_by_round[b_rounds[k].get<int>()]);
        bv.push_back(b_values[k].get<double>());
      }
    const RatioInterval r = av.empty() ? RatioInterval{} : ratio_of_paired(av, bv);
    set_ratio(row, "b_over_a", r, bare_cell(row));
    row["b_over_a_p"] = r.has_interval() ? json(r.p_value) : json();
  }
}

double ratio_df(const json& rows, const json& row, const std::string& key) {
  if (!row.value(key + "_interval", json()).is_array()) return 0;
  if (key == "b_over_a") {
    const size_t pairs = row.value("rounds", json::array()).size();
    return pairs > 1 ? double(pairs - 1) : 0;
  }
  return designs_by_shape(rows)[shape_key(row)].residual_df();
}

void add_peer_ratios(json& rows, const std::string& base_rung) {
  auto designs = designs_by_shape(rows);
  std::map<std::string, std::string> base;  // shape -> the base rung's cell
  for (const auto& row : rows)
    if (!row.contains("peer") && row["rung"] == base_rung && row["status"] == "ok")
      base[shape_key(row)] = row["cell"].get<std::string>();
  for (auto& row : rows) {
    if (!row.contains("peer") || row["status"] != "ok") continue;
    const std::string key = shape_key(row);
    const RatioInterval r = base.count(key) ? designs[key].ratio(row["cell"].get<std::string>(), base[key])
                                            : RatioInterval{};
    row["ladder_vs_peer"] = {{"rung", base_rung},
                             {"tokens_per_s_ratio", r.ratio > 0 ? json(r.ratio) : json()},
                             {"tokens_per_s_interval", r.has_interval() ? json::array({r.lo, r.hi}) : json()},
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

// The noise threshold of the run table's ratios, as compare's default.
constexpr double kRatioNoisePct = 1.0;

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
  const json parity = row.value("parity", json::object());  // a row with no parity field: no verdict
  std::string verdict = parity.is_object() ? parity.value("status", "") : "";
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

// A ratio between two rows with its interval: "1.35 [1.21, 1.50]"; "?" after
// it when unresolved (the interval holds 1 and reaches past the noise
// threshold: more processes would tell); the value for machines.
TableCell ratio_cell(const json& row, const std::string& key) {
  const json& v = row.value(key, json());
  if (!v.is_number()) return {"-", ""};
  RatioInterval r;
  r.ratio = v.get<double>();
  const json interval = row.value(key + "_interval", json());
  if (interval.is_array()) {
    r.lo = interval[0].get<double>();
    r.hi = interval[1].get<double>();
  }
  const bool unresolved = r.has_interval() && !r.excludes_one() && !r.within(kRatioNoisePct);
  return {ratio_text(r) + (unresolved ? "?" : ""), v};
}

Row ok_row(const json& row, const std::string& name) {
  Row r;
  r.cells = {{name, nullptr}, {row["status"].get<std::string>(), nullptr}};
  const json markers = row.value("markers", json::object());
  for (const RunFigure& f : run_figures()) {
    if (!(f.shown & kRunTable)) continue;
    r.cells.push_back(figure_cell(f, row.value(f.key, json()), markers.value(f.key, "")));
    if (std::string(f.key) == "tokens_per_s_median") {
      r.cells.push_back(ratio_cell(row, "speedup_vs_fp32"));
      r.cells.push_back(ratio_cell(row, "speedup_vs_previous"));
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
    ratios += fmt::format("{}{}{} {:.2f}x of {}", ratios.empty() ? "" : ", ", shape_prefix(cell),
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
    const json causes = noise.value("causes", json::array());
    const bool busy = noise.contains("quiet") && !noise["quiet"].get<bool>();
    if (row.value("status", "") != "ok" || (!busy && causes.empty())) continue;
    cv_limit = noise["cv_limit"].get<double>();
    std::string seen;  // what the noise monitors named: steal, lost CPU time, load, GPU throttling
    for (const auto& c : causes) seen += "; " + c.get<std::string>();
    noisy += fmt::format("{}{} (steps {:.1f} %{}{})", noisy.empty() ? "" : ", ",
                         peer_display_name(row["cell"].get<std::string>()), 100 * noise["steps_cv"].get<double>(),
                         noise["processes_cv"].is_number()
                             ? fmt::format(", processes {:.1f} %", 100 * noise["processes_cv"].get<double>())
                             : std::string(),
                         seen);
  }
  if (!noisy.empty())
    notes.push_back({fmt::format("dt varied more than a quiet machine's {:.0f} % (CV), or the machine was seen busy, in "
                                 "{}: differences of that size between runs are not findings; rerun them (with "
                                 "--repeat)",
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
  if (summary.value("repeat_auto", json()).is_object()) {
    // --repeat auto gives the cells different numbers of processes.
    int fewest = 0, most = 0;
    for (const auto& row : summary.value("rows", json::array()))
      if (row.contains("repeats")) {
        const int n = row["repeats"].value("count", 1);
        fewest = fewest ? std::min(fewest, n) : n;
        most = std::max(most, n);
      }
    notes.push_back({fmt::format("figures: the median of each rung's per-process medians ({} to {} processes, "
                                 "--repeat auto, interleaved); peak: the largest process's",
                                 fewest, most)});
  } else if (const int repeats = summary.value("repeats", 1); repeats > 1) {
    notes.push_back({fmt::format("figures: the median of {} per-process medians (--repeat {}, interleaved); peak: the "
                                 "largest process's",
                                 repeats, repeats)});
  }
  const json roofline = summary.value("roofline", json::object());
  if (roofline.value("status", "") == "ok")
    notes.push_back({fmt::format("roofline ('p'): {} TFLOP/s on {}, measured once for the run before the rungs",
                                 roofline_figures(roofline), roofline.value("device", "?"))});
  else if (roofline.contains("reason"))
    notes.push_back({fmt::format("roofline ('p'): {}; each rung probed its own", roofline.value("reason", ""))});
  const json automatic = summary.value("repeat_auto", json());
  if (automatic.is_object()) {
    std::string unresolved;
    for (const auto& u : automatic.value("unresolved", json::array()))
      unresolved += fmt::format("{}{} {}", unresolved.empty() ? "" : ", ", u.value("cell", "?"), u.value("ratio", "?"));
    notes.push_back({fmt::format("{} round(s) in {:.1f} min (target +-{} %, budget {:.1f} min); stopped: {}{}",
                                 automatic.value("rounds", 0), automatic.value("elapsed_s", 0.0) / 60,
                                 automatic.value("target_ci_pct", 0.0), automatic.value("time_budget_s", 0.0) / 60,
                                 automatic.value("stopped", "?"),
                                 unresolved.empty() ? std::string() : "; still wider: " + unresolved),
                     "repeat auto:", unresolved.empty() ? Tone::kPlain : Tone::kWarn});
  }
  if (const json r = summary.value("resolution", json()); r.is_object())  // --ab, --repeat auto (bench/rounds.h)
    notes.push_back({r.value("line", ""), "resolution:"});
  not_effective_notes(summary, notes);
  for (const auto& row : summary["rows"])  // a reference that was not to run: the rung's parity is not checked
    if (!row.contains("peer") && row.contains("parity") && row["parity"].is_object() &&
        row["parity"].value("status", "") == "not_checked" && row["parity"].contains("reason"))
      notes.push_back({fmt::format("{}: {}", peer_display_name(row["cell"].get<std::string>()),
                                   row["parity"]["reason"].get<std::string>()),
                       "parity not checked:", Tone::kWarn});
  noise_notes(summary, notes);
  notes.push_back({fmt::format("x fp32, x prev: tokens/s ratios between rungs of this run (x prev: against the rung "
                               "above, or RUNG for a composite RUNG+SWITCH), with their 95 % interval "
                               "from the per-process values (rounds as blocks, reports/block_design.h; none with one "
                               "process per rung); '?': unresolved, the interval holds 1 and reaches past +-{} %",
                               kRatioNoisePct)});
  notes.push_back({"MFU %: against the datasheet peak; 'p' marks MFU against the measured matmul roofline at the "
                   "rung's precision (no datasheet entry). ops/step: CUDA kernels, or aten:: ops on CPU."});
  notes.push_back({"peak GiB: CUDA's peak reserved, or the CPU's peak resident set (the tensors' own peak: "
                   "memory.measured.peak_allocated_bytes); est GiB: the analytic estimate per device; sent MB: what "
                   "a ddp rank sends per step for its collectives (ring model; the interface's count in "
                   "ddp.per_rank)."});
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

// A ratio's cell from row[key] and row[key + "_interval"], as ratio_cell.
TableCell ratio_of(const json* row, const std::string& key) { return row ? ratio_cell(*row, key) : TableCell{"-", ""}; }

// The verdict on a ratio of tokens/s with its interval, as `ladder compare`
// draws it: "faster" or "slower" when the interval excludes 1, the change is
// at least the noise threshold and the p-value, Holm-adjusted over the
// rungs (`p_holm`), is below 0.05; "within noise" when the interval lies
// inside the threshold; "unresolved" otherwise; "cannot judge" without an
// interval (one round).
TableCell ratio_verdict(const json& row, const std::string& key, double p_holm) {
  const json& v = row.value(key, json());
  const json& i = row.value(key + "_interval", json());
  if (!v.is_number()) return {"missing", nullptr, Tone::kWarn};
  if (!i.is_array()) return {"cannot judge (one round)", nullptr, Tone::kWarn};
  RatioInterval r;
  r.ratio = v.get<double>();
  r.lo = i[0].get<double>();
  r.hi = i[1].get<double>();
  if (r.excludes_one() && std::fabs(r.ratio - 1) * 100 >= kRatioNoisePct && p_holm < 0.05)
    return {r.ratio > 1 ? "faster" : "slower", nullptr, r.ratio > 1 ? Tone::kGood : Tone::kBad};
  if (r.within(kRatioNoisePct)) return {"within noise", nullptr};
  return {"unresolved", nullptr, Tone::kWarn};
}

// --mode ablation: what each switch buys, alone on fp32 (fp32+X over fp32)
// and at the top (top over top-X; top+X over top for a switch beyond the
// ladder), with their intervals and parity verdicts.
Table ablation_table(const json& summary) {
  std::map<std::string, const json*> by_rung;
  std::vector<std::string> switches;
  for (const auto& row : summary["rows"]) {
    const std::string rung = row.value("rung", "");
    by_rung[rung] = &row;
    if ((rung.rfind("top-", 0) == 0 || rung.rfind("top+", 0) == 0) && row.value("side", "").empty())
      switches.push_back(rung.substr(4));
  }
  Table t;
  t.title = "what each switch buys (tokens/s ratios, 95 % interval; ? unresolved)";
  t.columns = {{"switch", "switch", "", Align::kLeft}, {"alone", "alone: fp32+X / fp32", ""},
               {"at_top", "at the top: top / top-X", ""}, {"parity", "parity (alone, top)", "", Align::kLeft}};
  auto find = [&](const std::string& rung) { return by_rung.count(rung) ? by_rung[rung] : nullptr; };
  auto parity = [](const json* row) { return row ? row->value("parity", json::object()).value("status", "-") : "-"; };
  for (const auto& x : switches) {
    const json* alone = find("fp32+" + x);
    const json* top = find("top-" + x) ? find("top-" + x) : find("top+" + x);
    TableCell at_top = ratio_of(top, "effect_at_top");
    if (top && top->value("status", "") != "ok") at_top = {top->value("status", "?") + " " + top->value("reason", ""), ""};
    t.rows.push_back({{{x, nullptr}, ratio_of(alone, "speedup_vs_fp32"), at_top,
                       {fmt::format("{}, {}", parity(alone), parity(top)), nullptr}}});
  }
  return t;
}

// --ab: per rung, side A's and side B's tokens/s, B over A paired by round
// with its interval, and the verdict.
Table ab_table(const json& summary) {
  // A summary written before b_over_a_p was recorded (2026-11-25) holds what
  // it takes: its ratios are made again from the per-process values.
  json rows = summary["rows"];
  for (const auto& row : rows)
    if (row.value("side", "") == "B" && row.value("status", "") == "ok" && !row.contains("b_over_a_p")) {
      add_side_ratios(rows);
      break;
    }
  std::map<std::string, const json*> side_a;
  for (const auto& row : rows)
    if (row.value("side", "") == "A") side_a[row.value("rung", "")] = &row;
  Table t;
  t.title = fmt::format("A/B in one run ({}): B over A, paired by round", summary["ab"].value("spec", "?"));
  t.columns = {{"rung", "rung", "", Align::kLeft},   {"a_tokens_per_s", "A tok/s", ""},
               {"b_tokens_per_s", "B tok/s", ""},    {"b_over_a", "B/A tok/s", ""},
               {"p_holm", "p (Holm)", ""},          {"verdict", "B is", "", Align::kLeft}};
  // The rungs are one family of tests: their p-values Holm-adjusted together.
  std::vector<const json*> b_rows;
  std::vector<double> p;
  for (const auto& row : rows)
    if (row.value("side", "") == "B" && !row.contains("peer")) {
      b_rows.push_back(&row);
      const json& pv = row.value("b_over_a_p", json());
      p.push_back(pv.is_number() ? pv.get<double>() : 1.0);
    }
  const std::vector<double> p_holm = holm_adjusted(p);
  for (size_t k = 0; k < b_rows.size(); ++k) {
    const json& row = *b_rows[k];
    const std::string rung = row.value("rung", "");
    const json* a = side_a.count(rung) ? side_a[rung] : nullptr;
    const bool tested = row.value("b_over_a_p", json()).is_number();
    t.rows.push_back({{{rung, nullptr},
                       number_cell(a ? a->value("tokens_per_s_median", json()) : json(), "{:.0f}"),
                       number_cell(row.value("tokens_per_s_median", json()), "{:.0f}"),
                       ratio_cell(row, "b_over_a"),
                       tested ? TableCell{fmt::format("{:.2g}", p_holm[k]), p_holm[k]} : TableCell{"-", nullptr},
                       ratio_verdict(row, "b_over_a", p_holm[k])}});
  }
  return t;
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
  if (summary.value("mode", "") == "ablation") doc.tables.push_back(ablation_table(summary));
  if (summary.value("ab", json()).is_object()) doc.tables.push_back(ab_table(summary));
  doc.notes = run_notes(summary, summary_path);
  // With peers: where the top rung's time goes against each, band by band.
  const auto rows = summary.value("rows", json::array());
  if (std::any_of(rows.begin(), rows.end(), [](const json& r) { return is_peer_cell(r.value("cell", "")); })) {
    RunBands bands = run_band_table(summary, std::filesystem::path(summary_path).parent_path().string());
    for (auto& t : bands.tables) doc.tables.push_back(std::move(t));
    if (bands.tables.empty()) doc.notes.push_back({"no band table: " + bands.why, "bands:", Tone::kWarn});
  }
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
