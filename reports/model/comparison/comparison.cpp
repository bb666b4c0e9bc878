// reports/model/comparison/comparison.cpp: the comparison model (see comparison.h); its
// document is reports/render/documents/comparison_document.cpp, its command
// reports/commands/compare.cpp.
#include "reports/model/comparison/comparison.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profiler/common/cli.h"
#include "reports/model/comparison/comparison_model.h"
#include "reports/model/run/peer_cells.h"
#include "reports/model/run/ratios.h"
#include "reports/model/report/rung_facts.h"
#include "reports/model/report/run_figures.h"
#include "reports/stats/block_design.h"
#include "reports/stats/inference.h"
#include "reports/stats/machine_speed.h"
#include "reports/stats/stats.h"
#include "variants/config/rungs.h"
#include "variants/config/switch_decl.h"
#include "reports/stats/verdict.h"
#include "profiler/common/config_error.h"

namespace ladder {

using nlohmann::json;

namespace {

// The operator slowdown hook's variable (bench/measure/observers/op_slowdown.h), named
// in the warning.
constexpr const char* kTestSlowOpVariable = "LADDER_TEST_SLOW_OP";

// Config fields that define what was measured: a difference makes the
// comparison meaningless. Everything else in the config (steps, seed, device,
// threads) may differ.
const std::vector<std::string>& defining_config_keys() {
  static const std::vector<std::string> kKeys = {
      "preset", "model.n_layer", "model.n_head", "model.n_embd", "model.block_size",
      "model.vocab_size", "batch", "seq", "total_batch", "micro_steps", "world_size",
      "model_vocab", "fixed_batch"};
  return kKeys;
}

// Environment keys that make up the subject of a comparison when they differ.
bool is_subject_key(const std::string& k) {
  for (const char* prefix : {"host", "os", "cpu_model", "cpu_capability", "threads.", "device.name",
                             "device.count", "device.memory_bytes", "device.compute_capability",
                             "versions.", "compiler", "build_type"})
    if (k.rfind(prefix, 0) == 0) return true;
  return false;
}

using Difference = std::tuple<std::string, json, json>;

// Whether both reports' builds declared switch `s` (where a report says).
bool declared_by_both(const SwitchDecl& s, const RungFacts& a, const RungFacts& b) {
  for (const RungFacts* f : {&a, &b})
    if (f->declared_switches && !f->declared_switches->count(s.name)) return false;
  return true;
}

// The defining config keys (and rung switches) on which two reports differ,
// with their values as the reports write them. A switch is compared where
// both builds declared it: one that a build did not have was off there, and
// is no difference (cast-cache, new on 2026-11-28, against the 2026-11-27
// H100 run); a group (fused) is its parts, compared one by one.
std::vector<Difference> config_differences(const RungFacts& a, const RungFacts& b) {
  std::vector<std::string> keys = defining_config_keys();
  for (const SwitchDecl* s : all_switches())
    if (s->role != SwitchRole::kGroup && declared_by_both(*s, a, b)) keys.push_back(std::string("switches.") + s->name);
  std::map<std::string, json> fa, fb;
  flatten(json(*a.config), "", fa);
  flatten(json(*b.config), "", fb);
  std::vector<Difference> out;
  for (const auto& k : keys) {
    const json va = fa.count(k) ? fa.at(k) : json(), vb = fb.count(k) ? fb.at(k) : json();
    if (va != vb) out.emplace_back(k, va, vb);
  }
  return out;
}

// The environment keys that make the subject of a comparison, flattened.
std::map<std::string, json> subject_environment(const json& env) {
  std::map<std::string, json> all, out;
  flatten(env, "", all);
  for (const auto& [k, v] : all)
    if (is_subject_key(k)) out[k] = v;
  return out;
}

// Every report of the inputs read once as facts (reports/model/report/rung_facts.h), by
// the report's place in its LoadedRun: the checks, the cells, the noise and
// the subject below all ask here, none reads a report again.
class ReportFacts {
 public:
  explicit ReportFacts(const std::vector<LoadedRun>& runs) {
    for (const auto& run : runs) {
      add(run);
      for (const auto& r : run.repeats) add(r);
    }
  }
  const RungFacts& of(const RungReport& report) const { return by_report_.at(&report); }
  // A cell's report in one run; none where the run lacks the cell.
  const RungFacts* of(const LoadedRun& run, const std::string& cell) const {
    const RungReport* r = run.find(cell);
    return r ? &of(*r) : nullptr;
  }

 private:
  void add(const LoadedRun& run) {
    for (const auto& r : run.reports) by_report_.emplace(&r, read_rung_facts(r));
  }
  std::map<const RungReport*, RungFacts> by_report_;
};

// Repeats of one input must agree on the environment (the first difference, or "").
std::string environment_difference(const LoadedRun& run, const LoadedRun& first, const LoadedRun& rep) {
  const auto env0 = subject_environment(first.environment()), env = subject_environment(rep.environment());
  std::set<std::string> keys;
  for (const auto* e : {&env0, &env})
    for (const auto& [k, v] : *e) keys.insert(k);
  for (const auto& k : keys) {
    const json a = env0.count(k) ? env0.at(k) : json(), b = env.count(k) ? env.at(k) : json();
    if (a != b)
      return fmt::format("input {}: repeat {} ran in another environment than repeat {}: environment.{} is {} there "
                         "but {} here; expected repeats of one build on one machine",
                         run.label, rep.path, first.path, k, a.dump(), b.dump());
  }
  return "";
}

// Repeats of one input are samples of one thing: a repeat that measured
// something else, or ran in another environment, is refused (exit 2), naming
// both files, the key and the two values. Pooling them would judge a mixture.
void check_repeats(const LoadedRun& run, const ReportFacts& facts) {
  if (run.repeats.size() < 2) return;
  const LoadedRun& first = run.repeats.front();
  for (size_t r = 1; r < run.repeats.size(); ++r) {
    const LoadedRun& rep = run.repeats[r];
    if (const std::string why = environment_difference(run, first, rep); !why.empty()) throw ConfigError(why);
    for (size_t c = 0; c < first.cells.size(); ++c) {
      const RungFacts *a = facts.of(first, first.cells[c]), *b = facts.of(rep, first.cells[c]);
      if (!a || !b || !a->config || !b->config) continue;
      for (const auto& [k, va, vb] : config_differences(*a, *b))
        throw ConfigError(fmt::format("input {}: rung '{}': config.{} is {} in {} but {} in {}; expected "
                                      "repeats of one configuration",
                                      run.label, first.cells[c], k, va.dump(),
                                      c < first.files.size() && !first.files[c].empty() ? first.files[c] : first.path,
                                      vb.dump(), rep.path));
    }
  }
}

// The numbers of a per-process list (null where a process has none: NaN).
std::vector<double> numbers(const std::vector<std::optional<double>>& values) {
  std::vector<double> out;
  for (const auto& v : values) out.push_back(v.value_or(std::nan("")));
  return out;
}

// One input's figures for a rung: every run-level figure (reports/model/report/run_figures.h)
// across its processes, and the samples the verdict tests. With one process
// the figures are its own (medians of its steps); with several (--repeat, or
// runs joined by commas) the median of the per-process values, which are the
// samples of the test.
InputCell input_cell(const LoadedRun& run, const std::string& cell, const ReportFacts& rung_facts) {
  InputCell in;
  std::vector<const RungReport*> reports;
  const auto all = processes_of(run);
  for (size_t k = 0; k < all.size(); ++k) {
    const RungReport* r = all[k]->find(cell);
    if (!r) continue;  // a round the cell did not run in (--repeat auto)
    const RungFacts& facts = rung_facts.of(*r);
    if (facts.status != "ok") {
      InputCell failed;
      failed.status = facts.status;
      return failed;
    }
    if (reports.empty()) {  // where a step's time went: the first process's op breakdown
      in.op_breakdown_ms = facts.op_breakdown_ms;
      in.op_breakdown_top = facts.op_breakdown_top;
      in.speed_of_light = facts.speed_of_light;
    }
    if (r->ddp && *r->ddp && (*r->ddp)->slow_rank) in.slow_rank.push_back(*(*r->ddp)->slow_rank);
    reports.push_back(r);
    in.rounds.push_back(int(k) + 1);  // the round of each process: its member's place in the input
    in.dt_ms_samples.insert(in.dt_ms_samples.end(), facts.dt_ms.begin(), facts.dt_ms.end());
  }
  if (reports.empty()) return in;
  const CellFigures figures = cell_figures_of(reports);
  in.status = "ok";
  in.runs = reports.size();
  in.markers = figures.markers;
  in.figures = figures.values;
  in.sample = reports.size() >= 2 ? fmt::format("median of {} per-process medians", reports.size())
                                  : fmt::format("median of {} steps of one process", in.dt_ms_samples.size());
  in.dt_ms_run_medians = figures.per_process.at("dt_ms_median");
  in.tokens_per_s_run_medians = figures.per_process.at("tokens_per_s_median");
  return in;
}

// An input's per-process values of a figure with their rounds.
ProcessSamples samples_of(const InputCell& in, const std::vector<std::optional<double>>& values) {
  ProcessSamples s;
  s.values = numbers(values);
  s.rounds = in.rounds;
  return s;
}

// One input against the baseline on a rung. The samples are the inputs'
// per-process median step times (a process is the independent unit; its
// steps are not independent of each other): their ratio, B over A, with its
// interval (Welch's on the logs, reports/stats/inference.h) and p-value. With one
// process on either side there is no sample to judge by: the ratio is shown
// and the verdict is "cannot judge". The verdict itself waits for the Holm
// adjustment over all rungs (decide).
Verdict test_rung(const InputCell& base, const InputCell& other, double noise_pct, bool paired) {
  Verdict v;
  if (!base.ok() || !other.ok()) {
    v.verdict = "missing";
    return v;
  }
  // The two sides of one A/B run: the processes of a round, side by side.
  const RoundPairs pairs = paired_by_round(samples_of(base, base.dt_ms_run_medians),
                                           samples_of(other, other.dt_ms_run_medians));
  const std::vector<double> a = paired ? pairs.a : numbers(base.dt_ms_run_medians);
  const std::vector<double> b = paired ? pairs.b : numbers(other.dt_ms_run_medians);
  const RatioInterval dt = paired ? ratio_of_paired(a, b) : ratio_of_independent(a, b);
  v.ratio_tokens_per_s = other.figure("tokens_per_s_median") / base.figure("tokens_per_s_median");
  v.ratio_dt_ms = other.figure("dt_ms_median") / base.figure("dt_ms_median");
  v.change_pct = 100.0 * (v.ratio_dt_ms - 1.0);
  v.n_base = a.size();
  v.n_other = b.size();
  v.noise_threshold_pct = noise_pct;
  if (a.size() < 2 || b.size() < 2) {
    v.verdict = "cannot judge";
    v.why = fmt::format("{} process(es) a side: a process's steps are not independent samples, so one process "
                        "gives no verdict; measure with --repeat 2 or more (ladder run's default)",
                        std::min(a.size(), b.size()));
    return v;
  }
  // tokens/s is tokens over dt: its ratio's interval is the inverse of dt's.
  v.tokens_per_s_interval = Bounds{1 / dt.hi, 1 / dt.lo};
  v.dt_ms_interval = Bounds{dt.lo, dt.hi};
  v.df = dt.df;
  v.p_value = dt.p_value;
  v.method = paired ? "paired_t_on_log_dt" : "welch_t_on_log_dt";
  return v;
}

// The verdict from the Holm-adjusted p (below), the size of the change and
// its interval, by the one rule (reports/stats/verdict.h), with why.
void decide(Verdict& v, double alpha) {
  const double p = *v.p_holm, change_pct = v.change_pct, noise_pct = v.noise_threshold_pct;
  RatioInterval dt;
  dt.ratio = v.ratio_dt_ms;
  std::tie(dt.lo, dt.hi) = *v.dt_ms_interval;
  const Change change = judge_change(dt, p, alpha, noise_pct);
  v.verdict = change_name(change);
  const std::string interval = fmt::format("dt x{:.3f} [{:.3f}, {:.3f}]", dt.ratio, dt.lo, dt.hi);
  if (change == Change::kFaster || change == Change::kSlower)
    v.why = fmt::format("p {:.3g} < {}, |{:+.2f} %| >= {} %, {}", p, alpha, change_pct, noise_pct, interval);
  else if (change == Change::kWithinNoise)
    v.why = fmt::format("{} lies within the noise threshold {} % (p {:.3g})", interval, noise_pct, p);
  else
    v.why = dt.excludes_one()
                ? fmt::format("{} excludes no change, but p {:.3g} >= {} after the adjustment over {} rungs: "
                              "more processes would tell",
                              interval, p, alpha, v.tests_in_family)
                : fmt::format("{} holds both no change and changes beyond {} % (p {:.3g}): more processes "
                              "would tell",
                              interval, noise_pct, p);
}

// Holm-Bonferroni over the rungs one input is compared on
// (reports/stats/inference.h): the family of verdicts keeps its false-alarm rate.
void holm_adjust(std::vector<Verdict*>& tested) {
  std::vector<double> p;
  for (const Verdict* t : tested) p.push_back(*t->p_value);
  const std::vector<double> adjusted = holm_adjusted(p);
  for (size_t k = 0; k < tested.size(); ++k) {
    tested[k]->p_holm = adjusted[k];
    tested[k]->tests_in_family = tested.size();
  }
}

// Per rung of an input with 2+ processes, each with a speed probe: whether
// the machine's speed explains the processes' spread in dt
// (reports/stats/machine_speed.h), its cause named with the rung; returns the
// probe's half-range of each such rung.
std::vector<double> add_probe_causes(const LoadedRun& run, const ReportFacts& facts, std::vector<std::string>& causes) {
  std::vector<double> ranges;
  for (const auto& cell : run.cells) {
    std::vector<double> dt, speed;
    for (const LoadedRun* m : processes_of(run)) {
      const RungFacts* r = facts.of(*m, cell);
      if (!r || r->status != "ok") continue;
      if (!r->speed_index_per_s) return {};  // reports from before the probe (or a peer's): nothing to say
      dt.push_back(r->dt_ms_median.value_or(0));
      speed.push_back(*r->speed_index_per_s);
    }
    const auto s = probe_spread(dt, speed, kQuietCvLimit);
    if (!s) continue;
    ranges.push_back(s->probe_half_range_pct);
    if (s->explains) causes.push_back(fmt::format("{}: {}", cell, s->cause));
  }
  return ranges;
}

// What disturbed an input's processes (their noise monitors,
// bench/measure/observers/noise_monitor.h): the median over its complete reports of each
// reading, and every cause named.
std::optional<InputNoise> input_noise(const LoadedRun& run, const ReportFacts& facts) {
  std::map<std::string, std::vector<double>> values;
  InputNoise out;
  for (const LoadedRun* m : processes_of(run))
    for (const auto& report : m->reports) {
      const RungFacts& r = facts.of(report);
      if (r.status != "ok" || !r.has_noise) continue;
      for (const auto& [key, v] : r.noise_readings) values[key].push_back(v);
      for (const auto& c : r.noise_causes)
        if (std::find(out.causes.begin(), out.causes.end(), c) == out.causes.end()) out.causes.push_back(c);
    }
  if (values.empty()) return std::nullopt;  // reports from before the noise monitor
  const std::vector<double> probe_ranges = add_probe_causes(run, facts, out.causes);
  if (!probe_ranges.empty()) out.probe_half_range_pct = median(probe_ranges);
  for (const auto& [key, v] : values) out.readings[key] = median(v);
  return out;
}

// The first of a run's reports (its processes') that has a value for `of`, or null.
template <class F>
json first_report_value(const LoadedRun& run, const ReportFacts& facts, F of) {
  for (const LoadedRun* m : processes_of(run))
    for (const auto& r : m->reports)
      if (const auto v = of(facts.of(r))) return *v;
  return nullptr;
}

// subject[key] = values (one per input) when the inputs differ in it.
void add_if_differs(Comparison& cmp, const std::string& key, const std::vector<json>& values) {
  if (std::any_of(values.begin(), values.end(), [&](const json& v) { return v != values.front(); }))
    cmp.subject[key] = values;
}

// An input as the comparison lists it, with the warnings it raises.
ComparedInput compared_input(const LoadedRun& run, const ReportFacts& facts, const std::map<std::string, json>& shown,
                             Comparison& cmp) {
  // No complete report to read the environment from: what differs is not
  // known, so the comparison is never called an A/A pair.
  if (shown.empty()) {
    cmp.environment_unknown_in.push_back(run.label);
    cmp.warnings.push_back(fmt::format("input {}: no complete rung report to read its environment from; what "
                                       "differs between the inputs is unknown",
                                       run.label));
  }
  if (!run.missing_reports.empty()) {
    std::string files;
    for (size_t i = 0; i < run.missing_reports.size() && i < 3; ++i)
      files += fmt::format("{}{}", i ? ", " : "", run.missing_reports[i]);
    cmp.warnings.push_back(fmt::format("input {}: {} rung report(s) listed but not there, read as missing: {}{}",
                                       run.label, run.missing_reports.size(), files,
                                       run.missing_reports.size() > 3 ? ", ..." : ""));
  }
  const auto name = shown.find("device.name");
  return {run.label, run.path, run.run_id, std::max<size_t>(1, run.repeats.size()),
          name != shown.end() && name->second.is_string() ? name->second.get<std::string>() : "?", shown,
          input_noise(run, facts)};
}

// The inputs, and the subject: the environment keys whose values differ
// (and the test-only slowdown hook and ladder's commit, when the inputs
// differ in them).
void add_inputs_and_subject(const std::vector<LoadedRun>& runs, const ReportFacts& facts, Comparison& cmp) {
  std::set<std::string> env_keys;
  for (const auto& run : runs) {
    cmp.inputs.push_back(compared_input(run, facts, subject_environment(run.environment()), cmp));
    for (const auto& [k, v] : cmp.inputs.back().environment) env_keys.insert(k);
  }
  for (const auto& k : env_keys) {
    std::vector<json> values;
    for (const auto& in : cmp.inputs) values.push_back(in.environment.count(k) ? in.environment.at(k) : json());
    add_if_differs(cmp, k, values);
  }
  // A report measured with the test-only slowdown hook says so, and inputs
  // that differ in it are no A/A pair: the hook is part of the subject; so
  // is ladder's own build (two commits are no A/A pair either).
  std::vector<json> slowdowns, commits;
  for (const auto& run : runs) {
    slowdowns.push_back(first_report_value(run, facts, [](const RungFacts& f) { return f.test_slowdown_pct; }));
    if (!slowdowns.back().is_null())
      cmp.warnings.push_back(fmt::format("input {}: measured with the test-only slowdown hook "
                                         "(LADDER_TEST_SLOWDOWN_PCT={})", run.label, slowdowns.back().get<double>()));
    commits.push_back(first_report_value(run, facts, [](const RungFacts& f) { return f.git_commit; }));
  }
  add_if_differs(cmp, "timing.test_slowdown_pct", slowdowns);
  std::vector<json> slow_ops;
  for (const auto& run : runs) {
    slow_ops.push_back(first_report_value(run, facts, [](const RungFacts& f) { return f.test_slow_op; }));
    if (!slow_ops.back().is_null())
      cmp.warnings.push_back(fmt::format("input {}: measured with the test-only operator slowdown ({}={})",
                                         run.label, kTestSlowOpVariable, slow_ops.back().get<std::string>()));
  }
  add_if_differs(cmp, "op_breakdown.test_slow_op", slow_ops);
  add_if_differs(cmp, "suite.git_commit", commits);
}

// Comparability: what was measured must be the same. A difference is refused
// (ConfigError, exit 2) unless --force, which lists it in the output.
void check_comparable(const std::vector<LoadedRun>& runs, const ReportFacts& facts,
                      const std::vector<std::string>& cells, const CompareOptions& opts, Comparison& cmp) {
  std::vector<std::string> refusals;
  for (const auto& cell : cells) {
    const RungFacts* base = facts.of(runs[0], cell);
    if (!base || !base->config) continue;
    for (size_t i = 1; i < runs.size(); ++i) {
      const RungFacts* other = facts.of(runs[i], cell);
      if (!other || !other->config) continue;
      for (const auto& [k, a, b] : config_differences(*base, *other))
        refusals.push_back(fmt::format("rung '{}': config.{} is {} in {} ({}) but {} in {} ({})", cell, k,
                                       a.dump(), runs[0].label, runs[0].path, b.dump(), runs[i].label,
                                       runs[i].path));
    }
  }
  if (!refusals.empty() && !opts.force) {
    std::string msg = "the inputs measured different things, so their times are not comparable:\n";
    for (size_t i = 0; i < refusals.size() && i < 8; ++i) msg += "  " + refusals[i] + "\n";
    if (refusals.size() > 8) msg += fmt::format("  ... and {} more\n", refusals.size() - 8);
    msg += "use --force to compare anyway (the differences are then listed in the output)";
    throw ConfigError(msg);
  }
  cmp.forced_differences = refusals;
}

// One rung: each input's figures and its verdict against the baseline; the
// warnings it raises go to `cmp`.
ComparedRung compare_cell(const std::vector<LoadedRun>& runs, const ReportFacts& facts, const std::string& cell,
                          const CompareOptions& opts, Comparison& cmp) {
  // A PyTorch peer (bench/run/peers.h) is shown as "peer:<name>" beside the
  // rungs, and stays out of the geomean over the rungs.
  ComparedRung row{peer_display_name(cell), cell, is_peer_cell(cell), {}, {std::nullopt}};
  std::string missing_in;
  for (const auto& run : runs) {
    row.inputs.push_back(input_cell(run, cell, facts));
    if (!row.inputs.back().ok()) missing_in += (missing_in.empty() ? "" : ", ") + run.label;
  }
  for (size_t i = 1; i < runs.size(); ++i)
    row.vs_baseline.push_back(test_rung(row.inputs[0], row.inputs[i], opts.noise_threshold_pct, opts.paired));
  if (!missing_in.empty()) cmp.warnings.push_back(fmt::format("rung '{}': missing or failed in {}", cell, missing_in));
  return row;
}

// Input `i`'s rungs as a run's rows: its processes' tokens/s by round, for
// the ratio kinds (reports/model/run/ratios.h); the shape is the cell's prefix.
std::vector<SummaryRow> input_rows(const Comparison& cmp, size_t i) {
  std::vector<SummaryRow> rows;
  for (const auto& rung : cmp.rungs) {
    SummaryRow r;
    r.cell = rung.cell;
    r.rung = rung.cell.substr(shape_prefix(rung.cell).size());
    r.preset = shape_prefix(rung.cell);
    r.status = rung.inputs[i].status;
    if (rung.peer) r.peer = peer_name(rung.cell);
    if (rung.inputs[i].ok()) r.tokens_per_s = samples_of(rung.inputs[i], rung.inputs[i].tokens_per_s_run_medians);
    rows.push_back(std::move(r));
  }
  return rows;
}

// Each input's speedup over its own fp32 (of the same shape), with its
// interval: the ratio kind of the run table (x fp32, reports/model/run/ratios.h), the
// input's processes as samples and its rounds (the input's repeats) as blocks.
void add_input_speedups(Comparison& cmp) {
  for (size_t i = 0; i < cmp.inputs.size(); ++i) {
    std::vector<SummaryRow> rows = input_rows(cmp, i);
    compute_ratio(ratio_kind("speedup_vs_fp32"), rows);
    for (size_t k = 0; k < rows.size(); ++k) {
      InputCell& in = cmp.rungs[k].inputs[i];
      const auto r = rows[k].ratios.find("speedup_vs_fp32");
      if (!in.ok() || r == rows[k].ratios.end() || !r->second.value) continue;
      in.speedup_vs_fp32 = *r->second.value;
      if (r->second.against.empty()) continue;  // fp32 itself
      in.speedup_interval_recorded = true;
      in.speedup_vs_fp32_interval = r->second.interval;
    }
  }
}

// One input's speedup of a rung over its fp32, per round it ran both in.
std::vector<double> speedups_by_round(const InputCell& in, const InputCell& fp32) {
  if (!in.ok() || !fp32.ok()) return {};
  const RoundPairs p = paired_by_round(samples_of(fp32, fp32.tokens_per_s_run_medians),
                                       samples_of(in, in.tokens_per_s_run_medians));
  std::vector<double> out;
  for (size_t k = 0; k < p.a.size(); ++k) out.push_back(p.b[k] / p.a[k]);
  return out;
}

// Each input's speedup over its own fp32 and, but for the baseline, its
// ratio to the baseline's: the per-round speedups of the two inputs as
// independent samples (Welch on the logs), so the ratio carries its interval.
ShapeRow shape_of(const ComparedRung& row, const ComparedRung* fp32_row) {
  ShapeRow shape{row.rung, {}, {}, {std::nullopt}, {std::nullopt}};
  for (const auto& in : row.inputs) {
    shape.speedup_vs_fp32.push_back(in.speedup_vs_fp32);
    shape.speedup_vs_fp32_interval.push_back(in.speedup_vs_fp32_interval);
  }
  const auto& base = shape.speedup_vs_fp32[0];
  const std::vector<double> base_rounds =
      fp32_row ? speedups_by_round(row.inputs[0], fp32_row->inputs[0]) : std::vector<double>{};
  for (size_t i = 1; i < row.inputs.size(); ++i) {
    const auto& x = shape.speedup_vs_fp32[i];
    const RatioInterval r = fp32_row ? ratio_of_independent(base_rounds, speedups_by_round(row.inputs[i],
                                                                                            fp32_row->inputs[i]))
                                     : RatioInterval{};
    shape.ratio_to_baseline.push_back(x && base ? std::optional<double>(*x / *base) : std::nullopt);
    shape.ratio_to_baseline_interval.push_back(r.has_interval() ? std::optional<Bounds>({r.lo, r.hi})
                                                                : std::nullopt);
  }
  return shape;
}

// Per input: the verdicts after Holm's adjustment over its rungs, and the
// geometric mean of its ratios to the baseline over the rungs (not peers).
void add_verdicts_and_geomean(Comparison& cmp, double alpha) {
  cmp.geomean = {std::nullopt};
  for (size_t i = 1; i < cmp.inputs.size(); ++i) {
    std::vector<Verdict*> tested;
    double log_ratio = 0, log_dt = 0;
    int count = 0;
    for (auto& row : cmp.rungs) {
      Verdict& v = *row.vs_baseline[i];
      if (v.tested()) tested.push_back(&v);
      if (v.verdict != "missing" && !row.peer) {
        log_ratio += std::log(v.ratio_tokens_per_s);
        log_dt += std::log(v.ratio_dt_ms);
        ++count;
      }
    }
    holm_adjust(tested);
    for (Verdict* v : tested) decide(*v, alpha);
    cmp.geomean.push_back(count == 0 ? std::nullopt
                                     : std::optional<Geomean>({std::exp(log_ratio / count), std::exp(log_dt / count),
                                                               count}));
  }
}

}  // namespace

Comparison compare(const std::vector<LoadedRun>& runs, const CompareOptions& opts) {
  const ReportFacts facts(runs);
  for (const auto& run : runs) check_repeats(run, facts);
  Comparison cmp;
  cmp.alpha = opts.alpha;
  cmp.noise_threshold_pct = opts.noise_threshold_pct;
  add_inputs_and_subject(runs, facts, cmp);
  std::vector<std::string> cells;  // in the order they first appear
  for (const auto& run : runs)
    for (const auto& c : run.cells)
      if (std::find(cells.begin(), cells.end(), c) == cells.end()) cells.push_back(c);
  check_comparable(runs, facts, cells, opts, cmp);
  for (const auto& cell : cells) cmp.rungs.push_back(compare_cell(runs, facts, cell, opts, cmp));
  add_input_speedups(cmp);
  for (const auto& row : cmp.rungs) {
    const std::string fp32 = shape_prefix(row.cell) + base_rung().name;
    const ComparedRung* fp32_row = nullptr;
    for (const auto& other : cmp.rungs)
      if (other.cell == fp32 && row.cell != fp32) fp32_row = &other;
    cmp.ladder_shape.push_back(shape_of(row, fp32_row));
  }
  add_verdicts_and_geomean(cmp, opts.alpha);
  if (opts.kernels) cmp.kernels = compare_kernels(runs, cells, opts.alpha, opts.kernel_threshold_pct, opts.paired);
  for (const auto& in : cmp.inputs)
    if (in.processes_per_rung < 2)
      cmp.warnings.push_back(fmt::format(
          "input {} has one process per rung: no verdict is drawn from it (a process's steps are not independent "
          "samples); the differences are shown. Measure with 'ladder run --repeat 2' or more (the default), or "
          "give runs joined by commas (A1,A2 B1,B2)",
          in.label));
  return cmp;
}

json compare_runs(const std::vector<LoadedRun>& runs, const CompareOptions& opts) {
  return comparison_json(compare(runs, opts));
}

std::vector<LoadedRun> split_sides(const LoadedRun& run) {
  std::vector<LoadedRun> sides(2);
  auto take = [](const LoadedRun& from, LoadedRun& to, const std::string& side) {
    for (size_t c = 0; c < from.cells.size(); ++c)
      if (from.cells[c].rfind(side + "/", 0) == 0) {
        to.cells.push_back(from.cells[c].substr(side.size() + 1));
        to.reports.push_back(from.reports[c]);
        to.files.push_back(c < from.files.size() ? from.files[c] : "");
      }
  };
  for (size_t s = 0; s < 2; ++s) {
    const std::string side = s == 0 ? "A" : "B";
    LoadedRun& to = sides[s];
    to.label = side;
    to.path = run.path + " (side " + side + ")";
    to.run_id = run.run_id;
    take(run, to, side);
    for (const auto& rep : run.repeats) {
      to.repeats.emplace_back();
      to.repeats.back().label = side;
      to.repeats.back().path = rep.path + " (side " + side + ")";
      take(rep, to.repeats.back(), side);
    }
    if (to.cells.empty())
      throw ConfigError(fmt::format("compare: '{}' is one input and not an A/B run (no cell of side {}); expected "
                                    "at least two inputs, or one run made with 'ladder run --ab'",
                                    run.path, side));
  }
  return sides;
}

}  // namespace ladder
