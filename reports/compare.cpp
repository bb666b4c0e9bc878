// reports/compare.cpp: the comparison model and the `ladder compare` command
// (see compare.h); its document is reports/comparison_document.cpp.
#include "reports/compare.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profiler/common/atomic_file.h"
#include "profiler/common/cli.h"
#include "reports/peer_cells.h"
#include "reports/reporter.h"
#include "reports/run_figures.h"
#include "reports/block_design.h"
#include "reports/inference.h"
#include "reports/machine_speed.h"
#include "variants/config.h"

namespace ladder {

using nlohmann::json;

namespace {

// Flattens nested objects into "a.b.c" -> value.
void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else {
    out[prefix] = j;
  }
}

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

// The defining config keys (and rung switches) on which two reports differ.
std::vector<std::tuple<std::string, json, json>> config_differences(const json& a_report, const json& b_report) {
  std::map<std::string, json> a, b;
  flatten(a_report.at("config"), "", a);
  flatten(b_report.at("config"), "", b);
  std::vector<std::string> keys = defining_config_keys();
  for (const auto& [k, v] : a)
    if (k.rfind("switches.", 0) == 0) keys.push_back(k);
  std::vector<std::tuple<std::string, json, json>> out;
  for (const auto& k : keys) {
    const json va = a.count(k) ? a[k] : json(), vb = b.count(k) ? b[k] : json();
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

// Repeats of one input are samples of one thing: a repeat that measured
// something else, or ran in another environment, is refused (exit 2), naming
// both files, the key and the two values. Pooling them would judge a mixture.
void check_repeats(const LoadedRun& run) {
  if (run.repeats.size() < 2) return;
  const LoadedRun& first = run.repeats.front();
  const auto env0 = subject_environment(first.environment());
  for (size_t r = 1; r < run.repeats.size(); ++r) {
    const LoadedRun& rep = run.repeats[r];
    const auto env = subject_environment(rep.environment());
    std::set<std::string> keys;
    for (const auto* e : {&env0, &env})
      for (const auto& [k, v] : *e) keys.insert(k);
    for (const auto& k : keys) {
      const json a = env0.count(k) ? env0.at(k) : json(), b = env.count(k) ? env.at(k) : json();
      if (a != b)
        throw ConfigError(fmt::format("input {}: repeat {} ran in another environment than repeat {}: "
                                      "environment.{} is {} there but {} here; expected repeats of one "
                                      "build on one machine",
                                      run.label, rep.path, first.path, k, a.dump(), b.dump()));
    }
    for (size_t c = 0; c < first.cells.size(); ++c) {
      const json* b = rep.find(first.cells[c]);
      const json& a = first.reports[c];
      if (!b || !a.contains("config") || !b->contains("config")) continue;
      for (const auto& [k, va, vb] : config_differences(a, *b))
        throw ConfigError(fmt::format("input {}: rung '{}': config.{} is {} in {} but {} in {}; expected "
                                      "repeats of one configuration",
                                      run.label, first.cells[c], k, va.dump(),
                                      c < first.files.size() && !first.files[c].empty() ? first.files[c] : first.path,
                                      vb.dump(),
                                      rep.path));
    }
  }
}

std::vector<double> dt_samples(const json& report) {
  std::vector<double> out;
  for (const auto& v : report.at("steps").at("dt_ms")) out.push_back(v.get<double>());
  return out;
}

bool ok(const json* r) { return r && r->value("status", "") == "ok"; }

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The runs of an input: the group's repeats, or the run itself.
std::vector<const LoadedRun*> members(const LoadedRun& run) {
  std::vector<const LoadedRun*> out;
  if (run.repeats.empty()) out.push_back(&run);
  for (const auto& r : run.repeats) out.push_back(&r);
  return out;
}

// The median over an input's runs of each run's median tokens/s, or -1 when
// a run lacks a complete report of the cell.
double tokens_per_s_median(const LoadedRun& run, const std::string& cell) {
  std::vector<const json*> reports;
  for (const LoadedRun* m : members(run)) {
    const json* r = m->find(cell);
    if (!r) continue;  // a round the cell did not run in
    if (!ok(r)) return -1;
    reports.push_back(r);
  }
  return reports.empty() ? -1 : cell_figures(reports)["tokens_per_s_median"].get<double>();
}

// One input's figures for a rung: every run-level figure (reports/run_figures.h)
// across its processes, and the samples the verdict tests. With one process
// the figures are its own (medians of its steps); with several (--repeat, or
// runs joined by commas) the median of the per-process values, which are the
// samples of the test.
json input_cell(const LoadedRun& run, const std::string& cell) {
  std::vector<const json*> reports;
  std::vector<double> pooled;
  json rounds = json::array();  // the round of each process: its member's place in the input
  const auto all = members(run);
  for (size_t k = 0; k < all.size(); ++k) {
    const json* r = all[k]->find(cell);
    if (!r) continue;  // a round the cell did not run in (--repeat auto)
    if (!ok(r)) return {{"status", r->value("status", "missing")}};
    reports.push_back(r);
    rounds.push_back(int(k) + 1);
    const auto samples = dt_samples(*r);
    pooled.insert(pooled.end(), samples.begin(), samples.end());
  }
  if (reports.empty()) return {{"status", "missing"}};
  const json figures = cell_figures(reports);
  json in = {{"status", "ok"}, {"runs", reports.size()}, {"rounds", rounds}, {"markers", figures["markers"]}};
  for (const RunFigure& f : run_figures()) in[f.key] = figures[f.key];
  const bool per_process = reports.size() >= 2;
  in["sample"] = per_process ? fmt::format("median of {} per-process medians", reports.size())
                             : fmt::format("median of {} steps of one process", pooled.size());
  in["dt_ms_samples"] = pooled;
  in["dt_ms_run_medians"] = figures["per_process"]["dt_ms_median"];
  in["tokens_per_s_run_medians"] = figures["per_process"]["tokens_per_s_median"];
  const double fp32_tok_s = tokens_per_s_median(run, shape_prefix(cell) + "fp32");
  in["speedup_vs_fp32"] = fp32_tok_s > 0 ? json(in["tokens_per_s_median"].get<double>() / fp32_tok_s) : json();
  // Where a step's time went (the op breakdown of the first process), when
  // it is valid: ms per step per category, and each category's largest
  // kernels or operators.
  const json& b = reports.front()->value("op_breakdown", json());
  const bool valid = b.is_object() && b.value("valid", false) && b.contains("categories_ms");
  in["op_breakdown_ms"] = valid ? b["categories_ms"] : json();
  in["op_breakdown_top"] = valid ? b.value("top_by_category", json()) : json();
  return in;
}

// One input against the baseline on a rung. The samples are the inputs'
// per-process median step times (a process is the independent unit; its
// steps are not independent of each other): their ratio, B over A, with its
// interval (Welch's on the logs, reports/inference.h) and p-value. With one
// process on either side there is no sample to judge by: the ratio is shown
// and the verdict is "cannot judge". The verdict itself waits for the Holm
// adjustment over all rungs (decide).
json test_rung(const json& base, const json& other, double noise_pct, bool paired) {
  if (base["status"] != "ok" || other["status"] != "ok") return {{"verdict", "missing"}};
  auto a = base["dt_ms_run_medians"].get<std::vector<double>>();
  auto b = other["dt_ms_run_medians"].get<std::vector<double>>();
  if (paired) {  // the two sides of one A/B run: the processes of a round, side by side
    std::map<int, double> a_by_round;
    for (size_t k = 0; k < a.size(); ++k) a_by_round[base["rounds"][k].get<int>()] = a[k];
    std::vector<double> pa, pb;
    for (size_t k = 0; k < b.size(); ++k)
      if (a_by_round.count(other["rounds"][k].get<int>())) {
        pa.push_back(a_by_round[other["rounds"][k].get<int>()]);
        pb.push_back(b[k]);
      }
    a = pa;
    b = pb;
  }
  const RatioInterval dt = paired ? ratio_of_paired(a, b) : ratio_of_independent(a, b);
  json v = {{"ratio_tokens_per_s",
             other["tokens_per_s_median"].get<double>() / base["tokens_per_s_median"].get<double>()},
            {"ratio_dt_ms", other["dt_ms_median"].get<double>() / base["dt_ms_median"].get<double>()},
            {"change_pct", 100.0 * (other["dt_ms_median"].get<double>() / base["dt_ms_median"].get<double>() - 1.0)},
            {"sample_unit", "processes"},
            {"n", {a.size(), b.size()}},
            {"noise_threshold_pct", noise_pct}};
  if (a.size() < 2 || b.size() < 2) {
    v["verdict"] = "cannot judge";
    v["p_value"] = nullptr;
    v["why"] = fmt::format("{} process(es) a side: a process's steps are not independent samples, so one process "
                           "gives no verdict; measure with --repeat 2 or more (ladder run's default)",
                           std::min(a.size(), b.size()));
    return v;
  }
  // tokens/s is tokens over dt: its ratio's interval is the inverse of dt's.
  v["ratio_tokens_per_s_interval"] = {1 / dt.hi, 1 / dt.lo};
  v["ratio_dt_ms_interval"] = {dt.lo, dt.hi};
  v["df"] = dt.df;
  v["p_value"] = dt.p_value;
  v["method"] = paired ? "paired_t_on_log_dt" : "welch_t_on_log_dt";
  return v;
}

// The verdict from the Holm-adjusted p (below), the size of the change and
// its interval: faster or slower when the change is significant, at least the
// noise threshold and its interval excludes no change; within noise when the
// interval lies within the threshold; otherwise unresolved (the interval
// holds both no change and a change larger than the threshold: more
// processes would tell).
void decide(json& v, double alpha) {
  const double p = v["p_holm"].get<double>(), change_pct = v["change_pct"].get<double>();
  const double noise_pct = v["noise_threshold_pct"].get<double>();
  RatioInterval dt;
  dt.ratio = v["ratio_dt_ms"].get<double>();
  dt.lo = v["ratio_dt_ms_interval"][0].get<double>();
  dt.hi = v["ratio_dt_ms_interval"][1].get<double>();
  const bool significant = p < alpha, large = std::fabs(change_pct) >= noise_pct;
  const std::string interval = fmt::format("dt x{:.3f} [{:.3f}, {:.3f}]", dt.ratio, dt.lo, dt.hi);
  if (significant && large && dt.excludes_one()) {
    v["verdict"] = change_pct < 0 ? "faster" : "slower";
    v["why"] = fmt::format("p {:.3g} < {}, |{:+.2f} %| >= {} %, {}", p, alpha, change_pct, noise_pct, interval);
  } else if (dt.within(noise_pct) || (significant && !large)) {
    v["verdict"] = "within noise";
    v["why"] = fmt::format("{} lies within the noise threshold {} % (p {:.3g})", interval, noise_pct, p);
  } else {
    v["verdict"] = "unresolved";
    v["why"] = dt.excludes_one()
                   ? fmt::format("{} excludes no change, but p {:.3g} >= {} after the adjustment over {} rungs: "
                                 "more processes would tell",
                                 interval, p, alpha, v.value("tests_in_family", 1))
                   : fmt::format("{} holds both no change and changes beyond {} % (p {:.3g}): more processes "
                                 "would tell",
                                 interval, noise_pct, p);
  }
}

// Holm-Bonferroni over the rungs one input is compared on
// (reports/inference.h): the family of verdicts keeps its false-alarm rate.
void holm_adjust(std::vector<json*>& tested) {
  std::vector<double> p;
  for (const json* t : tested) p.push_back((*t)["p_value"].get<double>());
  const std::vector<double> adjusted = holm_adjusted(p);
  for (size_t k = 0; k < tested.size(); ++k) {
    (*tested[k])["p_holm"] = adjusted[k];
    (*tested[k])["tests_in_family"] = tested.size();
  }
}

}  // namespace

namespace {

// Per rung of an input with 2+ processes, each with a speed probe: whether
// the machine's speed explains the processes' spread in dt
// (reports/machine_speed.h), its cause named with the rung; returns the
// probe's half-range of each such rung.
std::vector<double> add_probe_causes(const LoadedRun& run, json& causes) {
  std::vector<double> ranges;
  for (const auto& cell : run.cells) {
    std::vector<double> dt, speed;
    for (const LoadedRun* m : members(run)) {
      const json* r = m->find(cell);
      if (!ok(r)) continue;
      const json noise = r->contains("timing") ? (*r)["timing"].value("noise", json()) : json();  // null for a peer
      const json probe = noise.is_object() ? noise.value("probe", json()) : json();
      const json index = probe.is_object() ? probe.value("speed_index_per_s", json()) : json();
      if (!index.is_number()) return {};  // reports from before the probe: nothing to say
      dt.push_back((*r)["summary"]["dt_ms"]["median"].get<double>());
      speed.push_back(index.get<double>());
    }
    const auto s = probe_spread(dt, speed, kQuietCvLimit);
    if (!s) continue;
    ranges.push_back(s->probe_half_range_pct);
    if (s->explains) causes.push_back(fmt::format("{}: {}", cell, s->cause));
  }
  return ranges;
}

// What disturbed an input's processes (their noise monitors,
// bench/noise_monitor.h): the median over its complete reports of each
// reading, and every cause named.
json input_noise(const LoadedRun& run) {
  std::map<std::string, std::vector<double>> values;
  json causes = json::array();
  for (const LoadedRun* m : members(run))
    for (const auto& r : m->reports) {
      const json n = r.value("status", "") == "ok" && r.contains("timing") ? r["timing"].value("noise", json()) : json();
      if (!n.is_object()) continue;
      for (const char* key : {"steal_pct_of_wall", "cpu_pct_of_threads", "involuntary_switches_per_s"})
        if (n.value(key, json()).is_number()) values[key].push_back(n[key].get<double>());
      if (n.contains("load_1m") && n["load_1m"].value("end", json()).is_number())
        values["load_1m"].push_back(n["load_1m"]["end"].get<double>());
      for (const auto& c : n.value("causes", json::array()))
        if (std::find(causes.begin(), causes.end(), c) == causes.end()) causes.push_back(c);
    }
  if (values.empty()) return nullptr;  // reports from before the noise monitor
  const std::vector<double> probe_ranges = add_probe_causes(run, causes);
  json out = {{"causes", causes}};
  if (!probe_ranges.empty()) out["probe_half_range_pct"] = median_of(probe_ranges);
  for (const auto& [key, v] : values) out[key] = median_of(v);
  return out;
}

// report.<section>.<key> of the first of a run's reports (its processes')
// that has one for which `wanted` holds, or null.
json first_report_value(const LoadedRun& run, const char* section, const char* key,
                        bool (*wanted)(const json&)) {
  for (const LoadedRun* m : members(run))
    for (const auto& r : m->reports)
      if (r.contains(section) && r[section].is_object() && wanted(r[section].value(key, json())))
        return r[section][key];
  return nullptr;
}

// subject[key] = values (one per input) when the inputs differ in it.
void add_if_differs(json& cmp, const std::string& key, const json& values) {
  if (std::any_of(values.begin(), values.end(), [&](const json& v) { return v != values.front(); }))
    cmp["subject"][key] = values;
}

// The inputs, and the subject: the environment keys whose values differ
// (and the test-only slowdown hook and ladder's commit, when the inputs
// differ in them).
void add_inputs_and_subject(const std::vector<LoadedRun>& runs, json& cmp) {
  std::vector<std::map<std::string, json>> envs;
  cmp["environment_unknown_in"] = json::array();
  for (const auto& run : runs) {
    const std::map<std::string, json> shown = subject_environment(run.environment());
    envs.push_back(shown);
    // No complete report to read the environment from: what differs is not
    // known, so the comparison is never called an A/A pair.
    if (shown.empty()) {
      cmp["environment_unknown_in"].push_back(run.label);
      cmp["warnings"].push_back(fmt::format("input {}: no complete rung report to read its environment from; what "
                                            "differs between the inputs is unknown",
                                            run.label));
    }
    if (!run.missing_reports.empty()) {
      std::string files;
      for (size_t i = 0; i < run.missing_reports.size() && i < 3; ++i)
        files += fmt::format("{}{}", i ? ", " : "", run.missing_reports[i]);
      cmp["warnings"].push_back(fmt::format("input {}: {} rung report(s) listed but not there, read as missing: {}{}",
                                            run.label, run.missing_reports.size(), files,
                                            run.missing_reports.size() > 3 ? ", ..." : ""));
    }
    cmp["inputs"].push_back({{"label", run.label}, {"path", run.path}, {"run_id", run.run_id},
                             {"processes_per_rung", std::max<size_t>(1, run.repeats.size())},
                             {"device", shown.count("device.name") ? shown.at("device.name") : json("?")},
                             {"environment", shown},
                             {"noise", input_noise(run)}});
  }
  std::set<std::string> env_keys;
  for (const auto& e : envs)
    for (const auto& [k, v] : e) env_keys.insert(k);
  for (const auto& k : env_keys) {
    json values = json::array();
    for (const auto& e : envs) values.push_back(e.count(k) ? e.at(k) : json());
    add_if_differs(cmp, k, values);
  }
  // A report measured with the test-only slowdown hook says so, and inputs
  // that differ in it are no A/A pair: the hook is part of the subject; so
  // is ladder's own build (two commits are no A/A pair either).
  json slowdowns = json::array(), commits = json::array();
  for (const auto& run : runs) {
    const json slowdown = first_report_value(run, "timing", "test_slowdown_pct", [](const json& v) {
      return v.is_number();
    });
    slowdowns.push_back(slowdown.is_null() ? json() : json(slowdown.get<double>()));
    if (!slowdown.is_null())
      cmp["warnings"].push_back(fmt::format("input {}: measured with the test-only slowdown hook "
                                            "(LADDER_TEST_SLOWDOWN_PCT={})", run.label, slowdown.get<double>()));
    commits.push_back(first_report_value(run, "suite", "git_commit", [](const json& v) { return v.is_string(); }));
  }
  add_if_differs(cmp, "timing.test_slowdown_pct", slowdowns);
  add_if_differs(cmp, "suite.git_commit", commits);
}

// Comparability: what was measured must be the same. A difference is refused
// (ConfigError, exit 2) unless --force, which lists it in the output.
void check_comparable(const std::vector<LoadedRun>& runs, const std::vector<std::string>& cells,
                      const CompareOptions& opts, json& cmp) {
  std::vector<std::string> refusals;
  for (const auto& cell : cells) {
    const json* base = runs[0].find(cell);
    if (!base || !base->contains("config")) continue;
    for (size_t i = 1; i < runs.size(); ++i) {
      const json* other = runs[i].find(cell);
      if (!other || !other->contains("config")) continue;
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
  cmp["forced_differences"] = refusals;
}

// One rung: each input's figures and its verdict against the baseline; the
// warnings it raises go to `cmp`.
json compare_cell(const std::vector<LoadedRun>& runs, const std::string& cell, const CompareOptions& opts,
                  json& cmp) {
  // A PyTorch peer (bench/peers.h) is shown as "peer:<name>" beside the
  // rungs, and stays out of the geomean over the rungs.
  json row = {{"rung", peer_display_name(cell)}, {"cell", cell}, {"peer", is_peer_cell(cell)},
              {"inputs", json::array()}, {"vs_baseline", json::array({nullptr})}};
  std::string missing_in;
  for (const auto& run : runs) {
    row["inputs"].push_back(input_cell(run, cell));
    if (row["inputs"].back()["status"] != "ok") missing_in += (missing_in.empty() ? "" : ", ") + run.label;
  }
  for (size_t i = 1; i < runs.size(); ++i) {
    row["vs_baseline"].push_back(test_rung(row["inputs"][0], row["inputs"][i], opts.noise_threshold_pct, opts.paired));
  }
  if (!missing_in.empty()) cmp["warnings"].push_back(fmt::format("rung '{}': missing or failed in {}", cell, missing_in));
  return row;
}

// Each input's speedup over its own fp32, and its ratio to the baseline's.
// One input's speedup of `row` over its fp32, per round it ran both in.
std::vector<double> speedups_by_round(const json& row, const json& fp32_row, size_t input) {
  std::map<int, double> fp32;
  const json& f = fp32_row["inputs"][input];
  if (f["status"] != "ok") return {};
  for (size_t k = 0; k < f["tokens_per_s_run_medians"].size(); ++k)
    if (f["tokens_per_s_run_medians"][k].is_number()) fp32[f["rounds"][k].get<int>()] = f["tokens_per_s_run_medians"][k];
  std::vector<double> out;
  const json& in = row["inputs"][input];
  if (in["status"] != "ok") return {};
  for (size_t k = 0; k < in["tokens_per_s_run_medians"].size(); ++k) {
    const json& v = in["tokens_per_s_run_medians"][k];
    const auto it = fp32.find(in["rounds"][k].get<int>());
    if (v.is_number() && it != fp32.end() && it->second > 0) out.push_back(v.get<double>() / it->second);
  }
  return out;
}

// Each input's speedup over its own fp32 and, but for the baseline, its
// ratio to the baseline's: the per-round speedups of the two inputs as
// independent samples (Welch on the logs), so the ratio carries its interval.
json shape_of(const json& row, const json* fp32_row) {
  json shape = {{"rung", row["rung"]},
                {"speedup_vs_fp32", json::array()},
                {"speedup_vs_fp32_interval", json::array()},
                {"ratio_to_baseline", json::array({nullptr})},
                {"ratio_to_baseline_interval", json::array({nullptr})}};
  for (const auto& in : row["inputs"]) {
    shape["speedup_vs_fp32"].push_back(in.value("speedup_vs_fp32", json()));
    shape["speedup_vs_fp32_interval"].push_back(in.value("speedup_vs_fp32_interval", json()));
  }
  const json& base = shape["speedup_vs_fp32"][0];
  const std::vector<double> base_rounds = fp32_row ? speedups_by_round(row, *fp32_row, 0) : std::vector<double>{};
  for (size_t i = 1; i < row["inputs"].size(); ++i) {
    const json& x = shape["speedup_vs_fp32"][i];
    const RatioInterval r =
        fp32_row ? ratio_of_independent(base_rounds, speedups_by_round(row, *fp32_row, i)) : RatioInterval{};
    shape["ratio_to_baseline"].push_back(x.is_null() || base.is_null() ? json() : json(x.get<double>() / base.get<double>()));
    shape["ratio_to_baseline_interval"].push_back(r.has_interval() ? json::array({r.lo, r.hi}) : json());
  }
  return shape;
}

// Each input's speedup over its own fp32 (of the same shape), with its
// interval: the input's processes as samples, their rounds (the input's
// repeats) as blocks, as `ladder run` computes it (reports/block_design.h).
void add_input_speedups(json& cmp, size_t n_inputs) {
  for (size_t i = 0; i < n_inputs; ++i) {
    BlockDesign design;
    for (const auto& row : cmp["rungs"]) {
      const json& in = row["inputs"][i];
      if (in["status"] != "ok") continue;
      const json& values = in["tokens_per_s_run_medians"];
      for (size_t k = 0; k < values.size(); ++k)
        if (values[k].is_number() && values[k].get<double>() > 0)
          design.add(row["cell"].get<std::string>(), in["rounds"][k].get<int>(), values[k].get<double>());
    }
    for (auto& row : cmp["rungs"]) {
      json& in = row["inputs"][i];
      const std::string fp32 = shape_prefix(row["cell"].get<std::string>()) + "fp32";
      if (in["status"] != "ok" || !in["speedup_vs_fp32"].is_number() || row["cell"] == fp32) continue;
      const RatioInterval r = design.ratio(fp32, row["cell"].get<std::string>());
      if (r.ratio > 0) in["speedup_vs_fp32"] = r.ratio;
      in["speedup_vs_fp32_interval"] = r.has_interval() ? json::array({r.lo, r.hi}) : json();
    }
  }
}

// Per input: the verdicts after Holm's adjustment over its rungs, and the
// geometric mean of its ratios to the baseline over the rungs (not peers).
void add_verdicts_and_geomean(json& cmp, size_t n_inputs, double alpha) {
  cmp["geomean"] = json::array({nullptr});
  for (size_t i = 1; i < n_inputs; ++i) {
    std::vector<json*> tested;
    double log_ratio = 0, log_dt = 0;
    int count = 0;
    for (auto& row : cmp["rungs"]) {
      json& v = row["vs_baseline"][i];
      if (v.contains("p_value") && v["p_value"].is_number()) tested.push_back(&v);
      if (v.contains("ratio_tokens_per_s") && !row["peer"].get<bool>()) {
        log_ratio += std::log(v["ratio_tokens_per_s"].get<double>());
        log_dt += std::log(v["ratio_dt_ms"].get<double>());
        ++count;
      }
    }
    holm_adjust(tested);
    for (json* v : tested) decide(*v, alpha);
    cmp["geomean"].push_back(count == 0 ? json()
                                        : json{{"ratio_tokens_per_s", std::exp(log_ratio / count)},
                                               {"ratio_dt_ms", std::exp(log_dt / count)},
                                               {"rungs", count}});
  }
}

}  // namespace

json compare_runs(const std::vector<LoadedRun>& runs, const CompareOptions& opts) {
  for (const auto& run : runs) check_repeats(run);
  json cmp = {{"schema_version", 1}, {"kind", "ladder.comparison"}, {"alpha", opts.alpha},
              {"noise_threshold_pct", opts.noise_threshold_pct},
              {"metric", "dt_ms"}, {"inputs", json::array()}, {"warnings", json::array()},
              {"forced_differences", json::array()}, {"subject", json::object()},
              {"rungs", json::array()}, {"ladder_shape", json::array()}};
  add_inputs_and_subject(runs, cmp);
  std::vector<std::string> cells;  // in the order they first appear
  for (const auto& run : runs)
    for (const auto& c : run.cells)
      if (std::find(cells.begin(), cells.end(), c) == cells.end()) cells.push_back(c);
  check_comparable(runs, cells, opts, cmp);
  for (const auto& cell : cells) cmp["rungs"].push_back(compare_cell(runs, cell, opts, cmp));
  add_input_speedups(cmp, runs.size());
  for (const auto& row : cmp["rungs"]) {
    const std::string fp32 = shape_prefix(row["cell"].get<std::string>()) + "fp32";
    const json* fp32_row = nullptr;
    for (const auto& other : cmp["rungs"])
      if (other["cell"] == fp32 && row["cell"] != fp32) fp32_row = &other;
    cmp["ladder_shape"].push_back(shape_of(row, fp32_row));
  }
  add_verdicts_and_geomean(cmp, runs.size(), opts.alpha);
  for (const auto& in : cmp["inputs"])
    if (in["processes_per_rung"].get<int>() < 2)
      cmp["warnings"].push_back(fmt::format(
          "input {} has one process per rung: no verdict is drawn from it (a process's steps are not independent "
          "samples); the differences are shown. Measure with 'ladder run --repeat 2' or more (the default), or "
          "give runs joined by commas (A1,A2 B1,B2)",
          in["label"].get<std::string>()));
  return cmp;
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

int compare_command(const std::vector<std::string>& args) {
  CompareOptions opts;
  std::string format = "text", html, out;
  std::vector<std::string> inputs;
  ArgParser ap("compare",
               "Compare runs: ladder compare BASELINE OTHER [MORE ...]. Each input is a run directory,\n"
               "a summary.json or a rung report, or runs joined by commas (a1,a2,a3). An input's samples\n"
               "are its per-process medians ('ladder run --repeat N', 2 by default, or joined runs): each\n"
               "ratio is shown with its 95 % interval (Welch's t on the logs). A rung is faster or slower\n"
               "only when p < --alpha (Holm-adjusted), the median dt moved by --noise-threshold or more and\n"
               "the interval excludes no change; within noise when the interval lies inside the threshold;\n"
               "unresolved otherwise. One process per rung gives no verdict (its steps are not independent).\n"
               "Different presets, batches, sequence lengths or rung definitions are refused unless --force.");
  ap.add_value("--alpha", "P", "significance level (default 0.05)",
               [&](const std::string& v) { opts.alpha = parse_double("--alpha", v); });
  ap.add_value("--noise-threshold", "PCT",
               "smallest change of median dt, in %, called faster or slower (default 1)",
               [&](const std::string& v) { opts.noise_threshold_pct = parse_double("--noise-threshold", v); });
  ap.add_value("--format", "NAME",
               fmt::format("output format: {} (default text; html: a page with charts)",
                           format_names(DocumentKind::kComparison)),
               [&](const std::string& v) { format = v; });
  ap.add_value("--out", "FILE", "write the output here instead of stdout", [&](const std::string& v) { out = v; });
  ap.add_value("--html", "OUT.html", "also write the HTML page (as --format html) here",
               [&](const std::string& v) { html = v; });
  ap.add_flag("--force", "compare even when the configs differ", [&] { opts.force = true; });
  ap.allow_positionals(&inputs);
  if (!ap.parse(args)) return 0;
  if (inputs.empty())
    throw ConfigError("compare: got no input; expected at least two (a baseline and another), or one A/B run");
  if (!(opts.alpha > 0 && opts.alpha < 1))
    throw ConfigError(fmt::format("--alpha: got {}, expected a number in (0, 1)", opts.alpha));
  if (!(opts.noise_threshold_pct >= 0))
    throw ConfigError(fmt::format("--noise-threshold: got {}, expected a percentage >= 0", opts.noise_threshold_pct));
  const Reporter& reporter = find_reporter("--format", format, DocumentKind::kComparison);
  for (const auto& [option, file] : {std::pair{"--html", html}, std::pair{"--out", out}})
    if (!file.empty() && std::filesystem::path(file).has_parent_path())
      ensure_writable_dir(std::filesystem::path(file).parent_path().string(), option);
  std::vector<LoadedRun> runs;
  for (size_t i = 0; i < inputs.size(); ++i)
    runs.push_back(load_run_group(inputs[i], i < 26 ? std::string(1, char('A' + i)) : fmt::format("I{}", i)));
  if (runs.size() == 1) {  // one A/B run: its two sides, paired by round
    runs = split_sides(runs.front());
    opts.paired = true;
  }
  // Single rung reports of different rungs (fp32 vs bf16, say) are compared
  // as one row; their differing switches then need --force.
  bool all_single = true;
  for (const auto& r : runs) all_single = all_single && r.cells.size() == 1;
  if (all_single)
    for (auto& r : runs) {
      r.cells[0] = runs[0].cells[0];
      for (auto& rep : r.repeats) rep.cells[0] = runs[0].cells[0];
    }
  const Document doc = comparison_document(compare_runs(runs, opts));
  const std::string text = reporter.render(doc, {out.empty() && isatty(STDOUT_FILENO) != 0});
  if (out.empty()) {
    fmt::print("{}", text);
  } else {
    write_file_atomically(out, text);
    fmt::print(stderr, "{}: {}\n", format, out);
  }
  if (!html.empty()) {
    write_file_atomically(html, find_reporter("--html", "html", DocumentKind::kComparison).render(doc, {}));
    fmt::print(stderr, "html: {}\n", html);
  }
  return 0;
}

}  // namespace ladder
