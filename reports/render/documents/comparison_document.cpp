// reports/render/documents/comparison_document.cpp: the comparison (compare_runs's model,
// reports/model/comparison/comparison.h) as a Document: the lines above the tables (the inputs,
// what differs, forced differences, warnings), one row per rung and input
// with its verdict, the ladder's shape; and for a page, its charts
// (reports/render/sections/comparison_charts.h), the inputs, what differs and the
// environments as tables, and the largest kernels of each breakdown band.
// It reads the model's structs (reports/model/comparison/comparison_model.h); an absent
// value shows as a dash.
#include "reports/render/documents/comparison_document.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/render/sections/band_tables.h"
#include "reports/model/report/slow_rank.h"
#include "profiler/common/fields.h"
#include "reports/render/sections/speed_of_light_table.h"
#include "reports/model/comparison/comparison.h"
#include "reports/render/sections/comparison_charts.h"
#include "reports/render/sections/kernel_tables.h"
#include "reports/stats/inference.h"
#include "reports/model/json_fields.h"
#include "reports/model/report/run_figures.h"
#include "reports/render/figure_cells.h"
#include "variants/config/rungs.h"

namespace ladder {

using nlohmann::json;
using namespace json_fields;

namespace {

std::string label_at(const std::vector<std::string>& labels, size_t i) { return i < labels.size() ? labels[i] : kDash; }

// "a | b": a subject key's value in each input, as the terminal shows it.
std::string subject_values(const std::vector<json>& values) {
  std::string s;
  for (const auto& x : values) s += (s.empty() ? "" : " | ") + (x.is_string() ? x.get<std::string>() : x.dump());
  return s;
}

// The inputs, what differs between them, forced differences and warnings:
// the lines above the tables. A page shows the inputs and the subject as
// tables (their lines are kRestated) and boxes the rest.
std::vector<Line> header_lines(const Comparison& cmp) {
  std::vector<Line> h;
  const auto restated = [&](std::string s) { h.push_back({std::move(s), "", Tone::kPlain, LineKind::kRestated}); };
  for (const auto& in : cmp.inputs) {
    const size_t processes = in.processes_per_rung;
    restated(fmt::format("{}: {} (run {}, {}; {})", in.label, in.path, in.run_id, in.device,
                         processes > 1 ? fmt::format("{} processes per rung: medians of per-process medians", processes)
                                       : "one process per rung: medians of its steps"));
  }
  if (!cmp.environment_unknown_in.empty()) {
    std::string who;
    for (const auto& l : cmp.environment_unknown_in) who += (who.empty() ? "" : ", ") + l;
    restated(fmt::format("subject: unknown: {} has no complete report to read its environment from", who));
  } else if (cmp.subject.empty()) {
    restated("subject: same environment (an A/A comparison)");
  } else {
    restated("subject (what differs):");
    for (const auto& [k, v] : cmp.subject) restated(fmt::format("  {}: {}", k, subject_values(v)));
  }
  for (const auto& f : cmp.forced_differences) h.push_back({f, "FORCED:", Tone::kBad, LineKind::kForced});
  for (const auto& w : cmp.warnings) h.push_back({w, "warning:", Tone::kWarn, LineKind::kWarning});
  // What each input's noise monitors and speed probes named (reports/model/comparison/comparison.cpp input_noise).
  for (const auto& in : cmp.inputs) {
    std::string seen;
    if (in.noise)
      for (const auto& c : in.noise->causes) seen += (seen.empty() ? "" : "; ") + c;
    if (!seen.empty()) h.push_back({fmt::format("{}: {}", in.label, seen), "noise:", Tone::kWarn, LineKind::kWarning});
  }
  return h;
}

// Under the rung table: each input's geomean, and what "peer:" rows are.
std::vector<Line> rung_table_notes(const Comparison& cmp) {
  std::vector<Line> notes;
  const auto labels = input_labels(cmp);
  for (size_t i = 1; i < cmp.geomean.size(); ++i) {
    const auto& g = cmp.geomean[i];
    if (!g) continue;
    notes.push_back({fmt::format("geomean tokens/s ratio {} / baseline: {:.3f}{}", label_at(labels, i),
                                 g->ratio_tokens_per_s, g->rungs > 0 ? fmt::format(" over {} rungs", g->rungs) : "")});
  }
  for (const auto& row : cmp.rungs)
    if (row.peer) {
      notes.push_back(
          {fmt::format("peer:<name>: a PyTorch peer (scripts/peer.py) with {}'s switches, measured "
                       "in the same run as the rungs; not a rung: outside the geomean and loss parity",
                       peer_base_rung().name)});
      break;
    }
  return notes;
}

std::vector<Column> rung_columns() {
  std::vector<Column> cols = {
      {"rung", "rung", "", Align::kLeft}, {"input", "input", "", Align::kLeft}, {"status", "status", "", Align::kLeft}};
  for (const RunFigure& f : run_figures())
    if (f.shown & kCompareTable) cols.push_back(figure_column(f));
  cols.push_back({"ratio_tokens_per_s", "x base", ""});
  cols.push_back({"p_value", "p", ""});
  cols.push_back({"verdict", "verdict", "", Align::kLeft});
  return cols;
}

// "0.971 [0.951, 0.991]": a ratio with its interval.
TableCell ratio_with_interval(const std::optional<double>& ratio, const std::optional<Bounds>& interval,
                              const char* format = "{:.3f}") {
  if (!ratio) return {"-", ""};
  RatioInterval r;
  r.ratio = *ratio;
  if (interval) {
    r.lo = interval->first;
    r.hi = interval->second;
  }
  return {ratio_text(r, format), *ratio};
}

// A value of a map, or null where it has none.
template <class V>
V value_at(const std::map<std::string, V>& values, const std::string& key) {
  const auto it = values.find(key);
  return it == values.end() ? V() : it->second;
}

// One input's row of a rung: its figures and, but for the baseline, its verdict.
Row rung_row(const std::string& rung, const std::string& label, size_t i, const InputCell& in,
             const std::optional<Verdict>& v, size_t n_columns) {
  Row r;
  r.cells = {{i == 0 ? rung : "", rung},
             {label, nullptr, Tone::kPlain, series_colour(i)},
             {in.status, nullptr, in.ok() ? Tone::kPlain : Tone::kBad}};
  for (const RunFigure& f : run_figures())
    if (f.shown & kCompareTable)
      r.cells.push_back(figure_cell(f, value_at(in.figures, f.key), value_at(in.markers, f.key)));
  if (i == 0 || !v) {
    r.cells.resize(n_columns, TableCell{"", ""});
    return r;
  }
  const bool missing = v->verdict == "missing";  // the verdict alone: no figures to test
  const std::string verdict = missing ? v->verdict : fmt::format("{} ({:+.2f} %)", v->verdict, v->change_pct);
  r.cells.push_back(ratio_with_interval(missing ? std::nullopt : std::optional<double>(v->ratio_tokens_per_s),
                                        v->tested() ? v->tokens_per_s_interval : std::nullopt));
  r.cells.push_back(number_cell(v->tested() ? v->p_holm : std::nullopt, "{:.3g}"));
  r.cells.push_back({verdict, nullptr, verdict_tone(verdict)});
  return r;
}

// One row per rung x input: each input's figures (the run-level figures shown
// in compare's table, reports/model/report/run_figures.cpp) and its verdict against the baseline.
Table rung_table(const Comparison& cmp) {
  Table t;
  t.columns = rung_columns();
  t.tag = "rungs";
  const auto labels = input_labels(cmp);
  for (const auto& row : cmp.rungs) {
    for (size_t i = 0; i < row.inputs.size(); ++i) {
      t.rows.push_back(rung_row(row.rung, label_at(labels, i), i, row.inputs[i],
                                i < row.vs_baseline.size() ? row.vs_baseline[i] : std::nullopt, t.columns.size()));
      if (row.peer) t.rows.back().tag = "peer";
    }
  }
  t.notes = rung_table_notes(cmp);
  return t;
}

// Each input's speedup over its own fp32, side by side, and its ratio to the baseline's.
Table shape_table(const Comparison& cmp) {
  Table t;
  t.title = "ladder shape (speedup over each input's own fp32)";
  t.columns.push_back({"rung", "rung", "", Align::kLeft});
  const auto labels = input_labels(cmp);
  for (const auto& label : labels) t.columns.push_back({"speedup_vs_fp32_" + label, "x fp32 " + label, ""});
  for (size_t i = 1; i < labels.size(); ++i)
    t.columns.push_back({"ratio_" + labels[i] + "_to_" + labels[0], labels[i] + "/" + labels[0], ""});
  for (const ShapeRow& s : cmp.ladder_shape) {
    Row r;
    r.cells.push_back({s.rung, nullptr});
    // Input i's value with its interval, as a cell.
    auto at = [](const std::vector<std::optional<double>>& values, const std::vector<std::optional<Bounds>>& intervals,
                 size_t i) {
      return ratio_with_interval(i < values.size() ? values[i] : std::nullopt,
                                 i < intervals.size() ? intervals[i] : std::nullopt, "{:.2f}");
    };
    for (size_t i = 0; i < labels.size(); ++i) r.cells.push_back(at(s.speedup_vs_fp32, s.speedup_vs_fp32_interval, i));
    for (size_t i = 1; i < labels.size(); ++i)
      r.cells.push_back(at(s.ratio_to_baseline, s.ratio_to_baseline_interval, i));
    t.rows.push_back(r);
  }
  return t;
}

// The inputs as a table: each one's path, run, device and geomean against the baseline.
Section inputs_section(const Comparison& cmp) {
  const auto labels = input_labels(cmp);
  Table t;
  t.tag = "inputs";
  t.columns = {{"input", "input", "", Align::kLeft},
               {"path", "path", "", Align::kLeft, true},
               {"run_id", "run id", "", Align::kLeft, true},
               {"device", "device", "", Align::kLeft},
               {"geomean_ratio_tokens_per_s", "geomean tokens/s vs " + label_at(labels, 0), ""}};
  for (size_t i = 0; i < cmp.inputs.size(); ++i) {
    const ComparedInput& in = cmp.inputs[i];
    std::optional<double> ratio;
    if (i < cmp.geomean.size() && cmp.geomean[i]) ratio = cmp.geomean[i]->ratio_tokens_per_s;
    t.rows.push_back(
        {{{labels[i], nullptr, Tone::kPlain, series_colour(i)},
          {in.path, nullptr},
          {in.run_id, nullptr},
          {in.device, nullptr},
          i == 0 ? TableCell{"baseline", nullptr}
                 : number_cell(ratio, "{:.2f}", "\u00d7")}});
  }
  return {"", Placement::kTop, {}, {t}, false, "inputs"};
}

// A table of environment keys, one column per input.
Table key_table(const Comparison& cmp, const char* key_header, const char* tag) {
  Table t;
  t.tag = tag;
  t.columns = {{"key", key_header, "", Align::kLeft, true}};
  for (const auto& label : input_labels(cmp)) t.columns.push_back({label, label, "", Align::kLeft});
  return t;
}

// The environment keys whose values differ between the inputs, side by side.
std::vector<Section> subject_section(const Comparison& cmp) {
  if (cmp.subject.empty()) return {};
  Table t = key_table(cmp, "environment key", "subject");
  for (const auto& [key, values] : cmp.subject) {
    Row r;
    r.cells.push_back({key, nullptr});
    for (size_t i = 1; i < t.columns.size(); ++i)
      r.cells.push_back({i - 1 < values.size() ? value_text(values[i - 1]) : kDash, nullptr});
    t.rows.push_back(r);
  }
  return {{"What differs", Placement::kTop, {}, {t}, false, "subject"}};
}

// Every environment key of every input, side by side; the rows that differ marked.
Section environment_section(const Comparison& cmp) {
  std::vector<std::string> keys;
  for (const auto& in : cmp.inputs)
    for (const auto& [k, v] : in.environment)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  Table t = key_table(cmp, "key", "environment");
  for (const auto& k : keys) {
    std::vector<json> values;
    for (const auto& in : cmp.inputs) values.push_back(value_at(in.environment, k));
    Row r;
    r.cells.push_back({k, nullptr});
    for (const auto& v : values) r.cells.push_back({value_text(v), nullptr});
    if (std::any_of(values.begin(), values.end(), [&](const json& v) { return v != values.front(); }))
      r.tag = "differs";
    t.rows.push_back(r);
  }
  return {"Environment", Placement::kBottom, {}, {t}, false, "environment"};
}

// One rung's largest kernels or operators: per breakdown category and
// input, the first five of the model's list (largest first).
Table breakdown_names_table(const std::string& rung, const std::vector<InputCell>& inputs,
                            const std::vector<std::string>& labels) {
  constexpr size_t kRows = 5;
  Table t;
  t.title = rung;
  t.tag = "breakdown-top";
  t.columns = {{"category", "category", "", Align::kLeft},
               {"input", "input", "", Align::kLeft},
               {"name", "kernel or operator", "", Align::kLeft, true},
               {"ms", "ms per step", ""},
               {"calls", "calls per step", ""}};
  for (const auto& layer : breakdown_layers())
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].op_breakdown_top) continue;
      const auto& top = category_value(*inputs[i].op_breakdown_top, layer.key);
      for (size_t k = 0; k < top.size() && k < kRows; ++k)
        t.rows.push_back({{{layer.label, layer.key, Tone::kPlain, layer.colour},
                           {label_at(labels, i), nullptr, Tone::kPlain, series_colour(i)},
                           {top[k].name, nullptr},
                           number_cell(top[k].ms, "{:.3f}"),
                           number_cell(top[k].calls, "{:.1f}")}});
    }
  return t;
}

// What makes up each band of the breakdown chart: per rung (folded), the
// largest kernels (CUDA) or operators (CPU) of each category and input.
std::vector<Section> breakdown_names_section(const Comparison& cmp) {
  Section s{"What makes up each band",
            Placement::kAfterCharts,
            {{"The largest kernels (CUDA, own time) or operators (CPU, self time) of each category, per rung and "
              "input, from the first process's op breakdown."}},
            {},
            true,
            "breakdown-top"};
  const auto labels = input_labels(cmp);
  for (const auto& rung : cmp.rungs) {
    Table t = breakdown_names_table(rung.rung, rung.inputs, labels);
    if (!t.rows.empty()) s.tables.push_back(std::move(t));
  }
  if (s.tables.empty()) return {};
  return {s};
}

// One rung's bands across the inputs, each against the baseline (input 0),
// from each input's first process; nothing unless the baseline and another
// input have a valid breakdown.
std::vector<BandSource> rung_band_sources(const ComparedRung& rung, const std::vector<std::string>& labels) {
  std::vector<BandSource> sources;
  for (size_t i = 0; i < rung.inputs.size(); ++i) {
    const InputCell& in = rung.inputs[i];
    if (!in.op_breakdown_ms) {
      if (i == 0) return {};
      continue;
    }
    sources.push_back({label_at(labels, i), in.op_breakdown_ms->by_key(),
                       value_at(in.figures, "dt_ms_median")});
  }
  if (sources.size() < 2) return {};
  return sources;
}

Table rung_band_table(const std::string& rung, const std::vector<BandSource>& sources) {
  std::vector<std::pair<size_t, size_t>> diffs;
  for (size_t i = 1; i < sources.size(); ++i) diffs.emplace_back(i, 0);
  Table t = band_table(fmt::format("where {}'s step time goes in each input (op breakdown of the first "
                                   "process, ms per step)", rung),
                       sources, diffs);
  for (size_t i = 1; i < sources.size(); ++i) t.notes.push_back(band_verdict(sources, i, 0));
  return t;
}

// Band by band: the top rung (the last ladder rung with breakdowns to
// compare) as a table every format shows, and on a page every rung's, folded.
void add_band_tables(const Comparison& cmp, Document& doc) {
  const auto labels = input_labels(cmp);
  Section all{"Band by band", Placement::kAfterCharts,
              {{"Each rung's op breakdown in ms per step, each input against the baseline: which band a "
                "difference comes from."}},
              {}, true, "bands"};
  std::optional<Table> top;
  for (const auto& rung : cmp.rungs) {
    const auto sources = rung_band_sources(rung, labels);
    if (sources.empty()) continue;
    all.tables.push_back(rung_band_table(rung.rung, sources));
    if (!rung.peer) top = all.tables.back();
  }
  if (top) doc.tables.push_back(std::move(*top));
  if (!all.tables.empty()) doc.sections.push_back(std::move(all));
}

// The top rung whose inputs hold speed-of-light sections: each input's measured ms, floor and efficiency per
// band, side by side (none for reports made before the section existed).
void add_speed_of_light_table(const Comparison& cmp, Document& doc) {
  const auto labels = input_labels(cmp);
  std::optional<Table> top;
  for (const auto& rung : cmp.rungs) {
    const std::string& name = rung.rung;
    if (rung.peer) continue;
    std::vector<SpeedOfLightSection> sections;
    std::vector<std::string> with;
    for (size_t i = 0; i < rung.inputs.size(); ++i)
      if (const auto& s = rung.inputs[i].speed_of_light) {
        sections.push_back(*s);
        with.push_back(label_at(labels, i));
      }
    if (sections.size() >= 2) top = speed_of_light_comparison(sections, with, name);
  }
  if (top) doc.tables.push_back(std::move(*top));
}

// A multi-rank rung: each input's verdict on its ranks (its first process's,
// and how many of its processes named the same), one line per rung.
void add_rank_notes(const Comparison& cmp, Document& doc) {
  const auto labels = input_labels(cmp);
  for (const auto& rung : cmp.rungs) {
    std::string text_of_inputs;
    bool any = false;
    for (size_t i = 0; i < rung.inputs.size(); ++i) {
      const std::vector<SlowRank>& verdicts = rung.inputs[i].slow_rank;
      if (verdicts.empty()) continue;
      const auto same = std::count_if(verdicts.begin(), verdicts.end(),
                                      [&](const SlowRank& v) { return same_verdict(v, verdicts.front()); });
      any = any || verdicts.front().resolved;
      text_of_inputs += fmt::format("{}{}: {}{}", text_of_inputs.empty() ? "" : "; ", label_at(labels, i),
                                    slow_rank_text(verdicts.front()),
                                    verdicts.size() > 1 ? fmt::format(" ({} of {} processes judged the same)", same,
                                                                      verdicts.size())
                                                        : std::string());
    }
    if (!text_of_inputs.empty())
      doc.notes.push_back({rung.rung + ": " + text_of_inputs, "ranks:", any ? Tone::kWarn : Tone::kPlain});
  }
}

// --kernels: every rung's families and bands, their differences with
// intervals, and the charts of the largest.
void add_kernel_tables(const Comparison& cmp, Document& doc) {
  if (!cmp.kernels) return;
  const KernelComparison& kernels = *cmp.kernels;
  KernelView view = kernel_view(kernels, input_labels(cmp));
  for (auto& t : view.tables) doc.tables.push_back(std::move(t));
  for (auto& c : view.charts) doc.charts.push_back(std::move(c));
  doc.notes.push_back(
      {fmt::format("kernels: families are names with template arguments, tile sizes and architecture tokens "
                   "stripped, within a band; a process's ms per step is over its profiled steps, one that did not "
                   "run a family counts 0. slower/faster: {} p < {} (Holm-adjusted over the rung's families, "
                   "and apart over its bands), a change of at least {} % (--kernel-threshold) and 0.1 % of the step "
                   "(floor_ms), and an interval that excludes no change; added/removed: no process of one side ran it",
                   kernels.method == "paired" ? "the paired t's (by round)" : "Welch's", kernels.alpha,
                   kernels.threshold_pct)});
  if (kernels.rungs.empty())
    doc.notes.push_back({"kernels: no rung has a valid op breakdown in the baseline and another input"});
}

// "ladder compare: A vs B", and what the comparison is of.
void add_comparison_titles(const Comparison& cmp, Document& doc) {
  doc.title = "ladder compare";
  const auto labels = input_labels(cmp);
  for (size_t i = 0; i < labels.size(); ++i) doc.title += (i == 0 ? ": " : " vs ") + labels[i];
  std::string keys;
  for (const auto& [key, values] : cmp.subject) keys += (keys.empty() ? "" : ", ") + key;
  doc.subtitle = !cmp.environment_unknown_in.empty()
                     ? "What differs is unknown: an input has no complete report to read its environment from"
                 : keys.empty() ? "Same environment in every input: a repeat run (differences are noise or drift)"
                                : "Comparing " + keys;
}

}  // namespace

Document comparison_document(const Comparison& cmp) {
  Document doc;
  doc.kind = DocumentKind::kComparison;
  doc.data = comparison_json(cmp);
  add_comparison_titles(cmp, doc);
  doc.preamble = header_lines(cmp);
  doc.tables = {rung_table(cmp), shape_table(cmp)};
  doc.notes.push_back(
      {fmt::format("x base: tokens/s over the baseline's, with its 95 % interval from the per-process medians "
                   "(Welch's t on the logs). faster/slower: p < {} (Holm-adjusted over the rungs), a median dt "
                   "change of at least {} % (--noise-threshold) and an interval that excludes no change; within "
                   "noise: the interval lies inside the threshold; unresolved: neither, more processes would "
                   "tell; cannot judge: one process per rung (its steps are not independent samples). MFU 'p' = "
                   "against the measured roofline",
                   cmp.alpha, cmp.noise_threshold_pct)});
  add_rank_notes(cmp, doc);
  doc.charts = comparison_charts(cmp);
  doc.sections.push_back(inputs_section(cmp));
  for (auto* add : {subject_section, breakdown_names_section})
    for (Section& s : add(cmp)) doc.sections.push_back(std::move(s));
  add_band_tables(cmp, doc);
  add_speed_of_light_table(cmp, doc);
  add_kernel_tables(cmp, doc);
  doc.sections.push_back(environment_section(cmp));
  doc.sections.push_back({"",
                          Placement::kBottom,
                          {{fmt::format("ladder comparison \u00b7 schema version {} \u00b7 metric {}",
                                        kComparisonSchemaVersion, kComparisonMetric)}},
                          {},
                          false,
                          "footer"});
  return doc;
}

}  // namespace ladder
