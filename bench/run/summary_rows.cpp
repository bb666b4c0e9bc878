// bench/run/summary_rows.cpp: see summary_rows.h.
#include "bench/run/summary_rows.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "bench/run/run_dir.h"
#include "reports/stats/machine_speed.h"
#include "reports/model/run_figures.h"
#include "reports/stats/stats.h"

namespace ladder {

using nlohmann::json;

json row_base(const Cell& c, const std::string& status, const json& parity, const std::string& side) {
  json row = {{"cell", side.empty() ? c.id : side + "/" + c.id},
              {"preset", c.cfg.preset}, {"batch", c.cfg.batch}, {"seq", c.cfg.seq}, {"rung", c.cfg.rung},
              {"switches", c.cfg.sw}, {"status", status}, {"parity", parity}};
  if (!side.empty()) row["side"] = side;
  return row;
}

namespace {

double median_of(std::vector<double> v) { return summarize(std::move(v)).median; }

// What disturbed the cell's processes, as their noise monitors named it
// (bench/measure/noise_monitor.h), each cause once.
json noise_causes_of(const std::vector<json>& reports) {
  json causes = json::array();
  for (const auto& r : reports) {
    const json noise = r.contains("timing") ? r["timing"].value("noise", json()) : json();
    if (!noise.is_object()) continue;
    for (const auto& c : noise.value("causes", json::array()))
      if (std::find(causes.begin(), causes.end(), c) == causes.end()) causes.push_back(c);
  }
  return causes;
}

json noise_verdict(double steps_cv, std::optional<double> processes_cv, const json& causes) {
  const bool quiet = steps_cv <= kQuietCvLimit && (!processes_cv || *processes_cv <= kQuietCvLimit);
  return {{"quiet", quiet},
          {"cv_limit", kQuietCvLimit},
          {"steps_cv", steps_cv},
          {"processes_cv", processes_cv ? json(*processes_cv) : json()},
          {"causes", causes},
          {"basis", "CV of dt over a process's measured steps (the median over processes) and, with --repeat, "
                    "over the per-process medians; quiet when both are within cv_limit"}};
}

// The speed probe's index of each process (bench/measure/speed_probe.h); null where
// a process has none (a peer, a report from before the probe, a failed probe).
json probe_indices(const std::vector<json>& reports) {
  json v = json::array();
  for (const auto& r : reports) {
    const json noise = r.contains("timing") ? r["timing"].value("noise", json()) : json();  // null for a peer
    const json p = noise.is_object() ? noise.value("probe", json()) : json();
    v.push_back(p.is_object() ? p.value("speed_index_per_s", json()) : json());
  }
  return v;
}

// The row's probe section: each process's index and, where every process has
// one, whether the machine's speed explains their spread in dt (the rule of
// reports/stats/machine_speed.h); its cause joins the row's noise causes.
json probe_section(const std::vector<json>& reports, const std::vector<double>& dt, json& causes) {
  const json index = probe_indices(reports);
  json section = {{"speed_index_per_s", index}};
  std::vector<double> speeds;
  for (const auto& v : index)
    if (v.is_number()) speeds.push_back(v.get<double>());
  if (speeds.size() != dt.size()) return section;
  if (const auto s = probe_spread(dt, speeds, kQuietCvLimit)) {
    section["half_range_pct"] = s->probe_half_range_pct;
    section["dt_half_range_pct"] = s->dt_half_range_pct;
    section["correlation_with_dt"] = s->correlation;
    section["explains_dt_spread"] = s->explains;
    if (s->explains) causes.push_back(s->cause);
  }
  return section;
}

}  // namespace

json summary_row(const Cell& c, const std::vector<json>& reports, const std::vector<int>& rounds, const json& parity,
                 const std::string& side) {
  const json& first = reports.front();
  size_t bad = 0;
  while (bad < reports.size() && reports[bad].value("status", "missing") == "ok") ++bad;
  const json& deciding = bad < reports.size() ? reports[bad] : first;
  json row = row_base(c, deciding.value("status", "missing"), parity, side);
  row["report"] = relative_report(c, rounds.front(), side);
  if (reports.size() > 1) {
    json files = json::array();
    for (int k : rounds) files.push_back(relative_report(c, k, side));
    row["repeats"] = {{"count", reports.size()}, {"reports", files}, {"rounds", rounds}};
    if (bad < reports.size()) row["repeats"]["failed_repeat"] = rounds[bad];
  }
  if (deciding.contains("failure")) row["failure"] = deciding["failure"];
  if (row["status"] != "ok") return row;
  // Every declared run-level figure (reports/model/run_figures.cpp), across processes.
  std::vector<const json*> processes;
  for (const auto& r : reports) processes.push_back(&r);
  const json figures = cell_figures(processes);
  for (const RunFigure& f : run_figures()) row[f.key] = figures[f.key];
  row["per_process"] = figures["per_process"];
  row["rounds"] = rounds;  // the round each process ran in, parallel to per_process
  row["markers"] = figures["markers"];
  const size_t n = reports.size();
  row["sample"] = n == 1 ? fmt::format("the median of {} measured steps of one process",
                                       first["steps"]["dt_ms"].size())
                         : fmt::format("the median of {} per-process medians", n);
  std::vector<double> dt_cv;
  for (const auto& r : reports) dt_cv.push_back(r["summary"]["dt_ms"]["cv"].get<double>());
  const double steps_cv = median_of(dt_cv);
  row["dt_ms_cv"] = steps_cv;
  std::optional<double> processes_cv;
  json causes = noise_causes_of(reports);
  if (n > 1) {
    const std::vector<double> dt = figures["per_process"]["dt_ms_median"].get<std::vector<double>>();
    processes_cv = summarize(dt).cv;
    row["dt_ms_process_medians"] = dt;
    row["dt_ms_process_cv"] = *processes_cv;
    row["probe"] = probe_section(reports, dt, causes);
  }
  row["noise"] = noise_verdict(steps_cv, processes_cv, causes);
  row["peak_kind"] = first["memory"]["measured"]["peak_kind"];
  row["op_counts"] = first["op_counts"];
  json effective = json::object();
  for (const auto& [name, sw] : first["switches"].items())
    if (sw.value("enabled", false)) effective[name] = sw.value("effective", false);
  row["effective"] = effective;
  return row;
}

}  // namespace ladder
