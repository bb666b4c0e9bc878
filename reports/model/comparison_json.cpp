// reports/model/comparison_json.cpp: the comparison's JSON (see comparison_model.h):
// the one function that writes it.
#include "reports/model/comparison_model.h"

#include "profiler/common/fields.h"

#include <limits>

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
              {"dt_ms_run_medians", in.dt_ms_run_medians},
              {"tokens_per_s_run_medians", in.tokens_per_s_run_medians},
              {"speedup_vs_fp32", optional_json(in.speedup_vs_fp32)},
              {"op_breakdown_ms", in.op_breakdown_ms},
              {"op_breakdown_top", in.op_breakdown_top}};
  for (const auto& [key, value] : in.figures) out[key] = value;
  if (!in.speed_of_light.is_null()) out["speed_of_light"] = in.speed_of_light;  // reports before it have none
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

double InputCell::figure(const char* key) const {
  const auto it = figures.find(key);
  return it != figures.end() && it->second.is_number() ? it->second.get<double>() : 0;
}

json comparison_json(const Comparison& c) {
  json subject = json::object();
  for (const auto& [key, values] : c.subject) subject[key] = values;
  json out = {{"schema_version", 1},
          {"kind", "ladder.comparison"},
          {"alpha", c.alpha},
          {"noise_threshold_pct", c.noise_threshold_pct},
          {"metric", "dt_ms"},
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
