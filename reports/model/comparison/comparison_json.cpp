// reports/model/comparison/comparison_json.cpp: the comparison's JSON (see
// comparison_model.h): the one function that writes it, and the one that
// reads it back.
#include "reports/model/comparison/comparison_model.h"

#include <fmt/format.h>

#include "profiler/common/fields.h"
#include "reports/model/json_fields.h"
#include "reports/model/report/run_figures.h"

namespace ladder {

using nlohmann::json;

namespace {

json optional_json(const std::optional<double>& v) { return v ? json(*v) : json(); }
json interval_json(const std::optional<Bounds>& i) { return i ? json::array({i->first, i->second}) : json(); }

template <class T, class F>
json array_of(const std::vector<T>& items, F to_json) {
  json out = json::array();
  for (const auto& item : items) out.push_back(to_json(item));
  return out;
}

json input_cell_json(const InputCell& in) {
  if (!in.ok()) return {{"status", in.status}};
  json out = {{"status", in.status},
              {"runs", in.runs},
              {"rounds", in.rounds},
              {"markers", in.markers},
              {"sample", in.sample},
              {"dt_ms_samples", in.dt_ms_samples},
              {"dt_ms_run_medians", fields::to_json(in.dt_ms_run_medians)},
              {"tokens_per_s_run_medians", fields::to_json(in.tokens_per_s_run_medians)},
              {"speedup_vs_fp32", optional_json(in.speedup_vs_fp32)},
              {"op_breakdown_ms", in.op_breakdown_ms ? fields::to_json(*in.op_breakdown_ms) : json()},
              {"op_breakdown_top", in.op_breakdown_top ? fields::to_json(*in.op_breakdown_top) : json()}};
  for (const auto& [key, value] : in.figures) out[key] = fields::to_json(value);
  if (in.speed_of_light) out["speed_of_light"] = fields::to_json(*in.speed_of_light);  // reports before it have none
  if (!in.slow_rank.empty()) out["slow_rank"] = fields::to_json(in.slow_rank);
  if (in.speedup_interval_recorded) out["speedup_vs_fp32_interval"] = interval_json(in.speedup_vs_fp32_interval);
  return out;
}

json verdict_json(const std::optional<Verdict>& v) {
  if (!v) return nullptr;
  if (v->verdict == "missing") return {{"verdict", "missing"}};
  json out = {{"ratio_tokens_per_s", v->ratio_tokens_per_s},
              {"ratio_dt_ms", v->ratio_dt_ms},
              {"change_pct", v->change_pct},
              {"sample_unit", "processes"},
              {"n", {v->n_base, v->n_other}},
              {"noise_threshold_pct", v->noise_threshold_pct},
              {"verdict", v->verdict},
              {"why", v->why},
              {"p_value", optional_json(v->p_value)}};
  if (!v->tested()) return out;
  out.update({{"ratio_tokens_per_s_interval", interval_json(v->tokens_per_s_interval)},
              {"ratio_dt_ms_interval", interval_json(v->dt_ms_interval)},
              {"df", v->df},
              {"method", v->method},
              {"p_holm", optional_json(v->p_holm)},
              {"tests_in_family", v->tests_in_family}});
  return out;
}

json rung_json(const ComparedRung& r) {
  return {{"rung", r.rung},
          {"cell", r.cell},
          {"peer", r.peer},
          {"inputs", array_of(r.inputs, input_cell_json)},
          {"vs_baseline", array_of(r.vs_baseline, verdict_json)}};
}

json shape_json(const ShapeRow& s) {
  return {{"rung", s.rung},
          {"speedup_vs_fp32", array_of(s.speedup_vs_fp32, optional_json)},
          {"speedup_vs_fp32_interval", array_of(s.speedup_vs_fp32_interval, interval_json)},
          {"ratio_to_baseline", array_of(s.ratio_to_baseline, optional_json)},
          {"ratio_to_baseline_interval", array_of(s.ratio_to_baseline_interval, interval_json)}};
}

json noise_json(const std::optional<InputNoise>& n) {
  if (!n) return nullptr;
  json out = {{"causes", n->causes}};
  if (n->probe_half_range_pct) out["probe_half_range_pct"] = *n->probe_half_range_pct;
  for (const auto& [key, v] : n->readings) out[key] = v;
  return out;
}

json input_json(const ComparedInput& in) {
  return {{"label", in.label},
          {"path", in.path},
          {"run_id", in.run_id},
          {"processes_per_rung", in.processes_per_rung},
          {"device", in.device},
          {"environment", in.environment},
          {"noise", noise_json(in.noise)}};
}

json geomean_json(const std::optional<Geomean>& g) {
  if (!g) return nullptr;
  return {{"ratio_tokens_per_s", g->ratio_tokens_per_s}, {"ratio_dt_ms", g->ratio_dt_ms}, {"rungs", g->rungs}};
}

}  // namespace

namespace {

using namespace json_fields;

template <class T, class F>
std::vector<T> read_array(const json& obj, const std::string& key, F read) {
  std::vector<T> out;
  for (const auto& item : array_at(obj, key)) out.push_back(read(item));
  return out;
}

std::vector<std::string> read_texts(const json& obj, const std::string& key) {
  return read_array<std::string>(obj, key, [](const json& v) { return value_text(v); });
}

// A breakdown's categories read one by one: an absent category is 0 ms, an
// absent list none.
profiler::PerCategory<double> read_categories_ms(const json& ms) {
  profiler::PerCategory<double> out;
  for (size_t c = 0; c < profiler::kCategoryCount; ++c)
    out.values[c] = number(ms, profiler::category_key(profiler::Category(c))).value_or(0);
  return out;
}

profiler::PerCategory<std::vector<profiler::NamedTotal>> read_top(const json& top) {
  profiler::PerCategory<std::vector<profiler::NamedTotal>> out;
  for (size_t c = 0; c < profiler::kCategoryCount; ++c)
    for (const auto& t : array_at(top, profiler::category_key(profiler::Category(c))))
      out.values[c].push_back({text(t, "name"), number(t, "ms").value_or(0), number(t, "calls").value_or(0)});
  return out;
}

InputCell read_input_cell(const json& j) {
  InputCell in;
  in.status = text(j, "status", "missing");
  if (!in.ok()) return in;
  in.runs = size_t(number(j, "runs").value_or(0));
  for (const auto& r : array_at(j, "rounds"))
    if (r.is_number_integer()) in.rounds.push_back(r.get<int>());
  if (member(j, "markers").is_object())
    for (const auto& [key, m] : j.at("markers").items())
      if (m.is_string()) in.markers[key] = m.get<std::string>();
  for (const RunFigure& f : run_figures())
    if (j.contains(f.key)) in.figures[f.key] = number(j, f.key);
  in.sample = text(j, "sample", "");
  for (const auto& s : array_at(j, "dt_ms_samples"))
    if (s.is_number()) in.dt_ms_samples.push_back(s.get<double>());
  for (const auto& v : array_at(j, "dt_ms_run_medians")) in.dt_ms_run_medians.push_back(as_number(v));
  for (const auto& v : array_at(j, "tokens_per_s_run_medians"))
    in.tokens_per_s_run_medians.push_back(as_number(v));
  in.speedup_vs_fp32 = number(j, "speedup_vs_fp32");
  in.speedup_interval_recorded = j.contains("speedup_vs_fp32_interval");
  in.speedup_vs_fp32_interval = interval(member(j, "speedup_vs_fp32_interval"));
  if (member(j, "op_breakdown_ms").is_object()) in.op_breakdown_ms = read_categories_ms(j.at("op_breakdown_ms"));
  if (member(j, "op_breakdown_top").is_object()) in.op_breakdown_top = read_top(j.at("op_breakdown_top"));
  if (member(j, "speed_of_light").is_object())
    in.speed_of_light = fields::from_json<SpeedOfLightSection>(j.at("speed_of_light"), "comparison: speed_of_light");
  if (member(j, "slow_rank").is_array())
    in.slow_rank = fields::from_json<std::vector<SlowRank>>(j.at("slow_rank"), "comparison: slow_rank");
  return in;
}

std::optional<Verdict> read_verdict(const json& j) {
  if (!j.is_object()) return std::nullopt;
  Verdict v;
  v.verdict = text(j, "verdict", "missing");
  if (v.verdict == "missing") return v;
  v.ratio_tokens_per_s = number(j, "ratio_tokens_per_s").value_or(0);
  v.ratio_dt_ms = number(j, "ratio_dt_ms").value_or(0);
  v.change_pct = number(j, "change_pct").value_or(0);
  v.noise_threshold_pct = number(j, "noise_threshold_pct").value_or(0);
  const json& n = array_at(j, "n");
  if (n.size() == 2 && n[0].is_number() && n[1].is_number()) {
    v.n_base = n[0].get<size_t>();
    v.n_other = n[1].get<size_t>();
  }
  v.why = text(j, "why", "");
  v.p_value = number(j, "p_value");
  v.tokens_per_s_interval = interval(member(j, "ratio_tokens_per_s_interval"));
  v.dt_ms_interval = interval(member(j, "ratio_dt_ms_interval"));
  v.df = number(j, "df").value_or(0);
  v.method = text(j, "method", "");
  v.p_holm = number(j, "p_holm");
  v.tests_in_family = size_t(number(j, "tests_in_family").value_or(0));
  return v;
}

ComparedRung read_rung(const json& j) {
  ComparedRung r;
  r.rung = text(j, "rung");
  r.cell = text(j, "cell", r.rung);
  r.peer = member(j, "peer") == json(true);
  r.inputs = read_array<InputCell>(j, "inputs", read_input_cell);
  r.vs_baseline = read_array<std::optional<Verdict>>(j, "vs_baseline", read_verdict);
  return r;
}

ShapeRow read_shape(const json& j) {
  ShapeRow s;
  s.rung = text(j, "rung");
  s.speedup_vs_fp32 = read_array<std::optional<double>>(j, "speedup_vs_fp32", as_number);
  s.speedup_vs_fp32_interval = read_array<std::optional<Bounds>>(j, "speedup_vs_fp32_interval", interval);
  s.ratio_to_baseline = read_array<std::optional<double>>(j, "ratio_to_baseline", as_number);
  s.ratio_to_baseline_interval = read_array<std::optional<Bounds>>(j, "ratio_to_baseline_interval", interval);
  return s;
}

ComparedInput read_input(const json& j, size_t i) {
  ComparedInput in;
  in.label = text(j, "label", fmt::format("input {}", i));
  in.path = text(j, "path");
  in.run_id = text(j, "run_id");
  in.processes_per_rung = size_t(number(j, "processes_per_rung").value_or(1));
  in.device = member(j, "device").is_string() ? j.at("device").get<std::string>() : "?";
  if (member(j, "environment").is_object())
    for (const auto& [key, v] : j.at("environment").items()) in.environment[key] = v;
  const json& noise = member(j, "noise");
  if (noise.is_object()) {
    InputNoise n;
    for (const auto& c : array_at(noise, "causes")) n.causes.push_back(value_text(c));
    n.probe_half_range_pct = number(noise, "probe_half_range_pct");
    for (const auto& [key, v] : noise.items())
      if (key != "probe_half_range_pct" && v.is_number()) n.readings[key] = v.get<double>();
    in.noise = n;
  }
  return in;
}

std::optional<Geomean> read_geomean(const json& j) {
  const auto ratio = number(j, "ratio_tokens_per_s");
  if (!ratio) return std::nullopt;
  return Geomean{*ratio, number(j, "ratio_dt_ms").value_or(0), int(number(j, "rungs").value_or(0))};
}

}  // namespace

Comparison comparison_from_json(const json& j) {
  Comparison c;
  c.alpha = number(j, "alpha").value_or(0.05);
  c.noise_threshold_pct = number(j, "noise_threshold_pct").value_or(1.0);
  for (const auto& in : array_at(j, "inputs")) c.inputs.push_back(read_input(in, c.inputs.size()));
  c.warnings = read_texts(j, "warnings");
  c.forced_differences = read_texts(j, "forced_differences");
  c.environment_unknown_in = read_texts(j, "environment_unknown_in");
  if (member(j, "subject").is_object())
    for (const auto& [key, values] : j.at("subject").items())
      c.subject[key] = values.is_array() ? std::vector<json>(values.begin(), values.end()) : std::vector<json>{};
  c.rungs = read_array<ComparedRung>(j, "rungs", read_rung);
  c.ladder_shape = read_array<ShapeRow>(j, "ladder_shape", read_shape);
  c.geomean = read_array<std::optional<Geomean>>(j, "geomean", read_geomean);
  if (member(j, "kernels").is_object())
    c.kernels = fields::from_json<KernelComparison>(j.at("kernels"), "comparison: kernels");
  return c;
}

double InputCell::figure(const char* key) const {
  const auto it = figures.find(key);
  return it != figures.end() ? it->second.value_or(0) : 0;
}

json comparison_json(const Comparison& c) {
  json subject = json::object();
  for (const auto& [key, values] : c.subject) subject[key] = values;
  json out = {{"schema_version", kComparisonSchemaVersion},
          {"kind", "ladder.comparison"},
          {"alpha", c.alpha},
          {"noise_threshold_pct", c.noise_threshold_pct},
          {"metric", kComparisonMetric},
          {"inputs", array_of(c.inputs, input_json)},
          {"warnings", c.warnings},
          {"forced_differences", c.forced_differences},
          {"environment_unknown_in", c.environment_unknown_in},
          {"subject", subject},
          {"rungs", array_of(c.rungs, rung_json)},
          {"ladder_shape", array_of(c.ladder_shape, shape_json)},
          {"geomean", array_of(c.geomean, geomean_json)}};
  if (c.kernels) out["kernels"] = fields::to_json(*c.kernels);
  return out;
}

}  // namespace ladder
