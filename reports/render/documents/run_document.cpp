// reports/render/documents/run_document.cpp: see run_document.h.
#include "reports/render/documents/run_document.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/render/sections/band_tables.h"
#include "reports/render/sections/rank_tables.h"
#include "reports/render/sections/speed_of_light_table.h"
#include "reports/render/sections/figure_charts.h"
#include "reports/model/json_fields.h"
#include "reports/model/run/peer_cells.h"
#include "reports/render/reporter.h"
#include "reports/stats/block_design.h"
#include "reports/stats/inference.h"
#include "reports/stats/verdict.h"
#include "variants/config/switch_decl.h"
#include "reports/model/run/ratios.h"
#include "reports/model/report/run_figures.h"
#include "reports/render/figure_cells.h"
#include "reports/model/run/summary_json.h"
#include "variants/config/precision_name.h"

namespace ladder {

using nlohmann::json;

namespace {

// The ratio kinds the run table shows (reports/model/run/ratios.cpp), in their order:
// those shown only where a row has one, only then.
std::vector<const RatioKind*> shown_ratios(const RunSummary& run) {
  std::vector<const RatioKind*> kinds;
  for (const RatioKind& k : ratio_kinds()) {
    if (!(k.shown & kRatioRunTable)) continue;
    const bool any = std::any_of(run.rows.begin(), run.rows.end(), [&](const SummaryRow& r) {
      const auto it = r.ratios.find(k.key);
      return it != r.ratios.end() && it->second.value;
    });
    if (any || !(k.shown & kRatioOnlyWhereAny)) kinds.push_back(&k);
  }
  return kinds;
}

// The run table's columns: the rung and its status, every figure shown in
// the run table (reports/model/report/run_figures.cpp) with the ratios shown there after
// tokens/s, then the parity verdict and, for a row that did not run, why.
std::vector<Column> run_columns(const std::vector<const RatioKind*>& ratios) {
  std::vector<Column> cols = {{"rung", "rung", "", Align::kLeft}, {"status", "status", "", Align::kLeft}};
  for (const RunFigure& f : run_figures()) {
    if (!(f.shown & kRunTable)) continue;
    cols.push_back(figure_column(f));
    if (std::string(f.key) == "tokens_per_s_median")
      for (const RatioKind* k : ratios) cols.push_back({k->key, k->label, ""});
  }
  cols.push_back({"parity", "parity", "", Align::kLeft});
  cols.push_back({"reason", "reason", "", Align::kLeft});
  return cols;
}

// "pass gnorm 3.3e-03<=2e-02": the verdict, the quantity that decided and its value.
TableCell parity_cell(const SummaryRow& row) {
  const RowParity& p = row.parity;
  std::string verdict = p.recorded ? p.status.value_or("") : "";  // a row with no parity field: no verdict
  if (row.is_peer()) verdict = "not checked (peer)";
  if (p.worst_quantity) {
    const auto& worst = p.worst_rel_diff;
    verdict += fmt::format(" {} {}{}{:.0e}", *p.worst_quantity == "grad_norm" ? "gnorm" : "loss",
                           worst ? fmt::format("{:.1e}", *worst) : std::string("nan"),
                           worst && *worst <= p.rtol ? "<=" : ">", p.rtol);
  }
  const Tone tone = verdict.rfind("fail", 0) == 0 ? Tone::kBad : row.is_peer() ? Tone::kWarn : Tone::kGood;
  return {verdict, nullptr, tone};
}

// The row's ratio of a kind, or null when it has none.
const RowRatio* ratio_at(const SummaryRow* row, const std::string& key) {
  if (!row) return nullptr;
  const auto it = row->ratios.find(key);
  return it == row->ratios.end() ? nullptr : &it->second;
}

// A ratio between two rows with its interval: "1.35 [1.21, 1.50]"; "?" after
// it when unresolved (the interval holds 1 and reaches past the noise
// threshold: more processes would tell), "*" when a process of either cell
// was left out as disturbed (the noise line names it); the value for machines.
TableCell ratio_cell(const SummaryRow* row, const std::string& key) {
  const RowRatio* ratio = ratio_at(row, key);
  if (!ratio || !ratio->value) return {"-", ""};
  const RatioInterval r = ratio->as_interval();
  const bool unresolved = r.has_interval() && !r.excludes_one() && !r.within(kRatioNoisePct);
  return {ratio_text(r) + (unresolved ? "?" : "") + (ratio->left_out ? "*" : ""), *ratio->value};
}

Row ok_row(const SummaryRow& row, const std::string& name, const std::vector<const RatioKind*>& ratios) {
  Row r;
  r.cells = {{name, nullptr}, {row.status, nullptr}};
  for (const RunFigure& f : run_figures()) {
    if (!(f.shown & kRunTable)) continue;
    r.cells.push_back(figure_cell(f, row.written_figure(f.key), row.marker(f.key)));
    if (std::string(f.key) == "tokens_per_s_median")
      for (const RatioKind* k : ratios) r.cells.push_back(ratio_cell(&row, k->key));
  }
  r.cells.push_back(parity_cell(row));
  r.cells.push_back({"", ""});
  return r;
}

// A row that did not run or failed: its status and why, the figures blank.
Row failed_row(const SummaryRow& row, const std::string& name, size_t n_columns) {
  Row r;
  r.cells = {{name, nullptr}, {row.status, nullptr, Tone::kBad}};
  r.cells.resize(n_columns - 1, TableCell{"", ""});
  r.cells.push_back({row.why().substr(0, 90), row.why()});
  return r;
}

Table run_table(const RunSummary& run) {
  const std::vector<const RatioKind*> ratios = shown_ratios(run);
  Table t;
  t.columns = run_columns(ratios);
  bool peers_header = false;
  for (const auto& row : run.rows) {
    const std::string name = peer_display_name(row.cell);
    if (row.is_peer() && !peers_header) {
      peers_header = true;
      t.rows.push_back({{}, fmt::format("-- peers: PyTorch, the same model and switches as {}, each in its own Python "
                                        "process (not in loss parity) --",
                                        run.peers_compared_with)});
    }
    t.rows.push_back(row.ok() ? ok_row(row, name, ratios) : failed_row(row, name, t.columns.size()));
  }
  return t;
}

// "ladder fused-adamw 0.79x of compile": each peer beside the top single-process rung.
std::string peer_ratios(const RunSummary& run) {
  std::string ratios;
  for (const auto& row : run.rows) {
    const RowRatio* r = ratio_at(&row, "ladder_vs_peer");
    if (!r || !r->value) continue;
    ratios += fmt::format("{}{}{} {:.2f}x{} of {}", ratios.empty() ? "" : ", ", shape_prefix(row.cell),
                          run.peers_compared_with, *r->value, r->left_out ? "*" : "", row.peer.value_or("?"));
  }
  return ratios;
}

// The precision the row's matmuls ran in, from its switches' effects: bf16
// (autocast took effect), tf32 (a reduced fp32 mode took effect: TF32 on
// CUDA, oneDNN's tf32 or bf16 math on a CPU), else fp32.
const char* matmul_precision(const SummaryRow& row) {
  auto took = [&](const SwitchDecl& sw) {
    const auto it = row.effective.find(sw.name);
    return it != row.effective.end() && it->second;
  };
  return precision_name(ladder::matmul_precision(took(switches::bf16), took(switches::tf32)));
}

// "fused-adamw bf16, peer:eager bf16, peer:compile fp32": what the matmuls of
// the rung the peers copy and of each peer ran in, so that a ratio between
// them is read knowing whether both ran the same precision.
std::string peer_precisions(const RunSummary& run) {
  std::string line;
  for (const auto& row : run.rows)
    if (row.ok() && (row.is_peer() || row.rung == run.peers_compared_with))
      line += fmt::format("{}{} {}", line.empty() ? "" : ", ", peer_display_name(row.cell), matmul_precision(row));
  return line;
}

// The ok rows (by display name) for which `pick` holds, "a, b, c".
template <class F>
std::string rows_where(const RunSummary& run, F pick) {
  std::string names;
  for (const auto& row : run.rows)
    if (row.ok() && pick(row)) names += fmt::format("{}{}", names.empty() ? "" : ", ", peer_display_name(row.cell));
  return names;
}

// Numeric switches that did not take effect on this device, one line each:
// their rungs ran the previous precision, and the table's speedups show only
// what their other switches bought.
void not_effective_notes(const RunSummary& run, std::vector<Line>& notes) {
  auto not_effective = [&](const SwitchDecl& numeric) {
    return rows_where(run, [&](const SummaryRow& row) {
      const auto it = row.effective.find(numeric.name);
      return it != row.effective.end() && !it->second;
    });
  };
  if (const std::string rungs = not_effective(switches::tf32); !rungs.empty())
    notes.push_back({fmt::format("tf32: not effective in {}: no reduced-precision fp32 matmul mode on this device "
                                 "(see switches.tf32.reason); those rungs ran fp32",
                                 rungs)});
  if (const std::string rungs = not_effective(switches::bf16); !rungs.empty()) {
    const auto& evidence = run.roofline.bf16_emulated_evidence;
    notes.push_back({fmt::format("not effective in {}: {}; their matmuls ran in fp32 (--cpu-bf16 auto; 'on' forces bf16)",
                                 rungs,
                                 evidence ? "this CPU emulates bf16 matmuls (" + *evidence + ")"
                                          : std::string("see each report's switches.bf16.reason")),
                     "bf16:", Tone::kWarn});
  }
}

// Rows whose dt moved more than a quiet machine's (the noise verdict,
// bench/run/summary_rows.cpp), with their CVs, and 'p' MFU above 100 % (a
// roofline probe that ran slow).
void noise_notes(const RunSummary& run, std::vector<Line>& notes) {
  std::string noisy;
  double cv_limit = 0;
  for (const auto& row : run.rows) {
    const RowNoise& noise = row.noise;
    const bool busy = noise.quiet && !*noise.quiet;
    if (!row.ok() || (!busy && noise.causes.empty())) continue;
    cv_limit = noise.cv_limit;
    std::string seen;  // what the noise monitors named: steal, lost CPU time, load, GPU throttling
    for (const auto& c : noise.causes) seen += "; " + c;
    noisy += fmt::format("{}{} (steps {:.1f} %{}{})", noisy.empty() ? "" : ", ", peer_display_name(row.cell),
                         100 * noise.steps_cv,
                         noise.processes_cv ? fmt::format(", processes {:.1f} %", 100 * *noise.processes_cv)
                                            : std::string(),
                         seen);
  }
  if (!noisy.empty())
    notes.push_back({fmt::format("dt varied more than a quiet machine's {:.0f} % (CV), or the machine was seen busy, in "
                                 "{}: differences of that size between runs are not findings; rerun them (with "
                                 "--repeat)",
                                 100 * cv_limit, noisy),
                     "noise:", Tone::kWarn});
  for (const auto& row : run.rows)  // the processes the test of cells left out (reports/stats/block_design.h)
    for (const RowDisturbed& d : row.disturbed) {
      std::string seen;
      for (const auto& c : d.causes) seen += (seen.empty() ? "" : "; ") + c;
      notes.push_back({fmt::format("{} round {}: {:.2g}x slower than its other rounds and the other cells predict "
                                   "({}; p {:.1g}): left out of the ratios ('*')",
                                   peer_display_name(row.cell), d.round, d.slower_x,
                                   !seen.empty()    ? seen
                                   : row.is_peer() ? std::string("a peer's process has no noise monitors")
                                                   : std::string("its noise monitors named no cause"),
                                   d.p_value),
                       "noise:", Tone::kWarn});
    }
  const std::string over = rows_where(run, [](const SummaryRow& row) {
    return row.marker("mfu_pct") == "p" && row.figure("mfu_pct").value_or(0) > 100;
  });
  if (!over.empty())
    notes.push_back({fmt::format("'p' MFU above 100 % in {}: the run's roofline probe ran slow (see roofline.json's "
                                 "tflops_per_round)",
                                 over),
                     "roofline:", Tone::kWarn});
}

// A multi-rank cell's verdict on its ranks (reports/model/report/slow_rank.h): one
// line per cell; with several processes, each process's where they differ.
void rank_notes(const RunSummary& run, std::vector<Line>& notes) {
  for (const auto& row : run.rows) {
    if (row.slow_rank.empty()) continue;
    const SlowRank& first = row.slow_rank.front();
    const bool agree = std::all_of(row.slow_rank.begin(), row.slow_rank.end(),
                                   [&](const SlowRank& s) { return same_verdict(s, first); });
    const bool any = std::any_of(row.slow_rank.begin(), row.slow_rank.end(), [](const SlowRank& s) { return s.resolved; });
    const std::string cell = run.rows.size() > 1 ? peer_display_name(row.cell) + ": " : "";
    std::string text;
    if (row.slow_rank.size() == 1) {
      text = slow_rank_text(first);
    } else if (agree) {
      text = fmt::format("{} (the first of {} processes; each judged the same)", slow_rank_text(first),
                         row.slow_rank.size());
    } else {
      for (size_t k = 0; k < row.slow_rank.size(); ++k)
        text += fmt::format("{}process {}: {}", k ? "; " : "", k + 1, slow_rank_text(row.slow_rank[k]));
    }
    notes.push_back({cell + text, "ranks:", any ? Tone::kWarn : Tone::kPlain});
  }
}

// How the figures combine a cell's processes, the roofline, and --repeat auto's rounds.
void process_notes(const RunSummary& run, std::vector<Line>& notes) {
  if (run.repeat_auto) {
    // --repeat auto gives the cells different numbers of processes.
    int fewest = 0, most = 0;
    for (const auto& row : run.rows)
      if (row.processes) {
        fewest = fewest ? std::min(fewest, *row.processes) : *row.processes;
        most = std::max(most, *row.processes);
      }
    notes.push_back({fmt::format("figures: the median of each rung's per-process medians ({} to {} processes, "
                                 "--repeat auto, interleaved); peak: the largest process's",
                                 fewest, most)});
  } else if (run.repeats > 1) {
    notes.push_back({fmt::format("figures: the median of {} per-process medians (--repeat {}, interleaved); peak: the "
                                 "largest process's",
                                 run.repeats, run.repeats)});
  }
  if (run.roofline.ok)
    notes.push_back({fmt::format("roofline ('p'): {} TFLOP/s{} on {}, measured once for the run before the rungs",
                                 run.roofline.figures,
                                 run.roofline.memory.empty() ? "" : "; memory " + run.roofline.memory,
                                 run.roofline.device)});
  else if (run.roofline.reason)
    notes.push_back({fmt::format("roofline ('p'): {}; each rung probed its own", *run.roofline.reason)});
  if (const auto& a = run.repeat_auto) {
    std::string unresolved;
    for (const auto& u : a->unresolved) unresolved += fmt::format("{}{}", unresolved.empty() ? "" : ", ", u);
    notes.push_back({fmt::format("{} round(s) in {:.1f} min (target +-{} %, budget {:.1f} min); stopped: {}{}",
                                 a->rounds, a->elapsed_s / 60, a->target_ci_pct, a->time_budget_s / 60, a->stopped,
                                 unresolved.empty() ? std::string() : "; still wider: " + unresolved),
                     "repeat auto:", unresolved.empty() ? Tone::kPlain : Tone::kWarn});
  }
  if (run.resolution) notes.push_back({*run.resolution, "resolution:"});  // --ab, --repeat auto (bench/run/rounds.h)
}

std::vector<Line> run_notes(const RunSummary& run, const std::string& summary_path) {
  std::vector<Line> notes;
  if (const std::string ratios = peer_ratios(run); !ratios.empty())
    notes.push_back({fmt::format("ladder {} (tokens/s; above 1 ladder is faster); matmuls in: {}", ratios,
                                 peer_precisions(run)),
                     "peers:"});
  process_notes(run, notes);
  not_effective_notes(run, notes);
  for (const auto& row : run.rows)  // a reference that was not to run: the rung's parity is not checked
    if (!row.is_peer() && row.parity.status == "not_checked" && row.parity.reason)
      notes.push_back({fmt::format("{}: {}", peer_display_name(row.cell), *row.parity.reason), "parity not checked:",
                       Tone::kWarn});
  noise_notes(run, notes);
  rank_notes(run, notes);
  for (const RatioKind* k : shown_ratios(run))  // each shown ratio's legend, from its declaration
    if (*k->legend) notes.push_back({k->legend});
  notes.push_back({"MFU %: against the datasheet peak; 'p' marks MFU against the measured matmul roofline at the "
                   "rung's precision (no datasheet entry). ops/step: CUDA kernels, or aten:: ops on CPU."});
  notes.push_back({"peak GiB: CUDA's peak reserved, or the CPU's peak resident set (the tensors' own peak: "
                   "memory.measured.peak_allocated_bytes); est GiB: the analytic estimate per device; sent MB: what "
                   "a ddp rank sends per step for its collectives (ring model; the interface's count in "
                   "ddp.per_rank)."});
  notes.push_back({"parity: the larger relative difference to the reference over the first steps, of the loss (loss) "
                   "or the gradient norm (gnorm), against the rung's tolerance."});
  if (run.missing_count)
    notes.push_back({fmt::format("{} cell(s) missing ({}): {}", run.missing_count,
                                 run.status == "stopped" ? "the run stopped" : "interrupted", run.missing)});
  if (run.stopped_because) notes.push_back({"the run stopped " + *run.stopped_because});
  notes.push_back({"summary: " + summary_path});
  return notes;
}

// The verdict on a ratio of tokens/s with its interval, by `ladder
// compare`'s rule (reports/stats/verdict.h) on the ratio of step times it is
// the inverse of, at alpha 0.05 with the p-value Holm-adjusted over the
// rungs (`p_holm`); "cannot judge" without an interval (one round).
TableCell ratio_verdict(const RowRatio* ratio, double p_holm) {
  if (!ratio || !ratio->value) return {"missing", nullptr, Tone::kWarn};
  if (!ratio->interval) return {"cannot judge (one round)", nullptr, Tone::kWarn};
  const Change change = judge_change(time_ratio_of_rate(ratio->as_interval()), p_holm, 0.05, kRatioNoisePct);
  const Tone tone = change == Change::kFaster ? Tone::kGood
                    : change == Change::kSlower ? Tone::kBad
                    : change == Change::kUnresolved ? Tone::kWarn
                                                    : Tone::kPlain;
  return {change_name(change), nullptr, tone};
}

// --mode ablation: what each switch buys, alone on fp32 (fp32+X over fp32)
// and at the top (top over top-X; top+X over top for a switch beyond the
// ladder), with their intervals and parity verdicts.
Table ablation_table(const RunSummary& run) {
  std::map<std::string, const SummaryRow*> by_rung;
  std::vector<std::string> switches;
  for (const auto& row : run.rows) {
    by_rung[row.rung] = &row;
    if ((row.rung.rfind("top-", 0) == 0 || row.rung.rfind("top+", 0) == 0) && row.side.empty())
      switches.push_back(row.rung.substr(4));
  }
  Table t;
  t.title = "what each switch buys (tokens/s ratios, 95 % interval; ? unresolved)";
  t.columns = {{"switch", "switch", "", Align::kLeft}, {"alone", "alone: fp32+X / fp32", ""},
               {"at_top", "at the top: top / top-X", ""}, {"parity", "parity (alone, top)", "", Align::kLeft}};
  auto find = [&](const std::string& rung) { return by_rung.count(rung) ? by_rung[rung] : nullptr; };
  auto parity = [](const SummaryRow* row) { return row ? row->parity.status.value_or("-") : "-"; };
  for (const auto& x : switches) {
    const SummaryRow* alone = find("fp32+" + x);
    const SummaryRow* top = find("top-" + x) ? find("top-" + x) : find("top+" + x);
    TableCell at_top = ratio_cell(top, "effect_at_top");
    if (top && !top->ok()) at_top = {top->status + " " + top->reason, ""};
    t.rows.push_back({{{x, nullptr}, ratio_cell(alone, "speedup_vs_fp32"), at_top,
                       {fmt::format("{}, {}", parity(alone), parity(top)), nullptr}}});
  }
  return t;
}

// --ab: per rung, side A's and side B's tokens/s, B over A paired by round
// with its interval, and the verdict.
Table ab_table(const RunSummary& run) {
  std::map<std::string, const SummaryRow*> side_a;
  for (const auto& row : run.rows)
    if (row.side == "A") side_a[row.rung] = &row;
  Table t;
  t.title = fmt::format("A/B in one run ({}): B over A, paired by round", run.ab_spec.value_or("?"));
  t.columns = {{"rung", "rung", "", Align::kLeft},   {"a_tokens_per_s", "A tok/s", ""},
               {"b_tokens_per_s", "B tok/s", ""},    {"b_over_a", "B/A tok/s", ""},
               {"p_holm", "p (Holm)", ""},          {"verdict", "B is", "", Align::kLeft}};
  // The rungs are one family of tests: their p-values Holm-adjusted together.
  std::vector<const SummaryRow*> b_rows;
  std::vector<double> p;
  for (const auto& row : run.rows)
    if (row.side == "B" && !row.is_peer()) {
      b_rows.push_back(&row);
      const RowRatio* r = ratio_at(&row, "b_over_a");
      p.push_back(r && r->p ? *r->p : 1.0);
    }
  const std::vector<double> p_holm = holm_adjusted(p);
  for (size_t k = 0; k < b_rows.size(); ++k) {
    const SummaryRow& row = *b_rows[k];
    const SummaryRow* a = side_a.count(row.rung) ? side_a[row.rung] : nullptr;
    const RowRatio* r = ratio_at(&row, "b_over_a");
    const bool tested = r && r->p;
    t.rows.push_back({{{row.rung, nullptr},
                       number_cell(a ? a->figure("tokens_per_s_median") : std::nullopt, "{:.0f}"),
                       number_cell(row.figure("tokens_per_s_median"), "{:.0f}"),
                       ratio_cell(&row, "b_over_a"),
                       tested ? TableCell{fmt::format("{:.2g}", p_holm[k]), p_holm[k]} : TableCell{"-", nullptr},
                       ratio_verdict(r, p_holm[k])}});
  }
  return t;
}

// A summary row's figures as the charts read them: each run figure's value,
// and the speedup over fp32 with its interval (a ratio of the row,
// reports/model/run/ratios.h).
FigureRow figure_row(const SummaryRow& row) {
  FigureRow r;
  r.status = row.status.empty() ? "missing" : row.status;
  if (const auto it = row.ratios.find("speedup_vs_fp32"); it != row.ratios.end() && it->second.value)
    r.values["speedup_vs_fp32"] = FigureValue{*it->second.value, it->second.interval};
  for (const RunFigure& f : run_figures())
    if (const auto v = row.figure(f.key)) r.values[f.key] = FigureValue{*v, {}};
  return r;
}

// The run's charts, per rung: each figure with a chart title (tokens/s, peak
// memory) and the speedup over fp32 (reports/render/sections/figure_charts.h); the run is
// the one series.
std::vector<Chart> run_charts(const RunSummary& run) {
  std::vector<std::string> rungs;
  std::vector<FigureRow> rows;
  for (const SummaryRow& row : run.rows) {
    rungs.push_back(peer_display_name(row.cell.empty() ? row.rung : row.cell));
    rows.push_back(figure_row(row));
  }
  return figure_charts(rungs, {run.run_id.empty() ? "run" : run.run_id}, {rows}, "this run");
}

// "ladder run: <run id>", and how it ended.
void add_run_titles(const RunSummary& run, Document& doc) {
  doc.title = "ladder run: " + (run.run_id.empty() ? std::string("(no run id)") : run.run_id);
  doc.subtitle = (run.status.empty() ? std::string("unfinished") : run.status) + " run";
  if (!run.started_at.empty()) doc.subtitle += ", started " + run.started_at;
  if (!run.finished_at.empty()) doc.subtitle += ", finished " + run.finished_at;
}

}  // namespace

Document run_document(const RunSummary& recorded, const std::string& summary_path) {
  // A summary written before a ratio kind (or before b_over_a_p, 2026-11-25)
  // holds what it takes: its missing ratios are made from the per-process values.
  RunSummary run = recorded;
  compute_ratios(run.rows, /*only_missing=*/true);
  Document doc;
  doc.kind = DocumentKind::kRun;
  doc.tables.push_back(run_table(run));
  if (run.mode == "ablation") doc.tables.push_back(ablation_table(run));
  if (run.ab_spec) doc.tables.push_back(ab_table(run));
  doc.notes = run_notes(run, summary_path);
  // With peers: where the top rung's time goes against each, band by band.
  if (std::any_of(run.rows.begin(), run.rows.end(), [](const SummaryRow& r) { return is_peer_cell(r.cell); })) {
    RunBands bands = run_band_table(run, std::filesystem::path(summary_path).parent_path().string());
    for (auto& t : bands.tables) doc.tables.push_back(std::move(t));
    if (bands.tables.empty()) doc.notes.push_back({"no band table: " + bands.why, "bands:", Tone::kWarn});
  }
  // The top rung against the machine's limits, band by band (`ladder sol RUN` for every rung).
  auto sol = top_rung_speed_of_light(run, std::filesystem::path(summary_path).parent_path().string());
  if (sol) doc.tables.push_back(std::move(sol->table));
  add_run_titles(run, doc);
  doc.charts = run_charts(run);
  if (sol) doc.charts.push_back(std::move(sol->chart));
  // A multi-rank cell: each rank's phases as a stacked bar, and its tables in a
  // section (a page's; the text has the ranks: line).
  for (RankView& v : run_rank_views(run, std::filesystem::path(summary_path).parent_path().string()).views) {
    doc.charts.push_back(std::move(v.chart));
    Section s;
    s.title = "Ranks: " + v.verdict.text;
    s.placement = Placement::kAfterCharts;
    s.tables = std::move(v.tables);
    doc.sections.push_back(std::move(s));
  }
  return doc;
}

Document summary_document(const json& summary, const std::string& summary_path) {
  Document doc = run_document(read_run_summary(summary), summary_path);
  doc.data = summary;
  return doc;
}

void print_summary_table(const json& summary, const std::string& summary_path, const std::string& format) {
  const Reporter& reporter = find_reporter("--format", format, DocumentKind::kRun);
  Document doc = summary_document(summary, summary_path);
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
