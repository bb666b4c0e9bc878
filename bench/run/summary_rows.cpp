// bench/run/summary_rows.cpp: see summary_rows.h.
#include "bench/run/summary_rows.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "bench/run/run_dir.h"
#include "reports/stats/machine_speed.h"
#include "reports/model/report/run_figures.h"
#include "reports/model/run/summary_doc.h"
#include "reports/stats/stats.h"

namespace ladder {

using nlohmann::json;

namespace {

SummaryRowDoc row_doc(const Cell& c, const std::string& status, const RowContext& ctx) {
  const std::string& side = ctx.side;
  SummaryRowDoc row;
  row.cell = side.empty() ? c.id : side + "/" + c.id;
  row.preset = c.cfg.preset;
  row.batch = c.cfg.batch;
  row.seq = c.cfg.seq;
  row.rung = c.cfg.rung;
  row.switches = fields::from_json<std::map<std::string, bool>>(json(c.cfg.sw), "the cell's switches");
  row.status = status;
  row.parity = ctx.parity;
  if (!side.empty()) row.side = side;
  if (ctx.peer) row.peer = ctx.peer;
  return row;
}

}  // namespace

json row_without_reports(const Cell& c, const std::string& status, const RowContext& ctx, const std::string& reason) {
  SummaryRowDoc row = row_doc(c, status, ctx);
  if (!reason.empty()) row.reason = reason;
  return fields::to_json(row);
}

namespace {

// A process's noise monitor readings (bench/measure/observers/noise_monitor.h); none
// for a peer or a report from before the monitor.
const NoiseSection* noise_of(const RungReport& r) { return r.timing && r.timing->noise ? &*r.timing->noise : nullptr; }

// What each process's noise monitors named (bench/measure/observers/noise_monitor.h),
// in the cell's order (a peer's: none).
std::vector<std::vector<std::string>> causes_per_process(const std::vector<RungReport>& reports) {
  std::vector<std::vector<std::string>> out;
  for (const auto& r : reports) {
    out.emplace_back();
    if (const NoiseSection* noise = noise_of(r)) out.back() = noise->causes;
  }
  return out;
}

// What disturbed the cell's processes, each cause once.
std::vector<std::string> noise_causes_of(const std::vector<std::vector<std::string>>& per_process) {
  std::vector<std::string> causes;
  for (const auto& process : per_process)
    for (const auto& c : process)
      if (std::find(causes.begin(), causes.end(), c) == causes.end()) causes.push_back(c);
  return causes;
}

NoiseDoc noise_verdict(double steps_cv, std::optional<double> processes_cv, std::vector<std::string> causes) {
  NoiseDoc n;
  n.quiet = steps_cv <= kQuietCvLimit && (!processes_cv || *processes_cv <= kQuietCvLimit);
  n.cv_limit = kQuietCvLimit;
  n.steps_cv = steps_cv;
  n.processes_cv = processes_cv;
  n.causes = std::move(causes);
  n.basis = "CV of dt over a process's measured steps (the median over processes) and, with --repeat, over the "
            "per-process medians; quiet when both are within cv_limit";
  return n;
}

// The speed probe's index of each process (bench/measure/observers/speed_probe.h); null where
// a process has none (a peer, a report from before the probe, a failed probe).
std::vector<std::optional<double>> probe_indices(const std::vector<RungReport>& reports) {
  std::vector<std::optional<double>> v;
  for (const auto& r : reports) {
    const NoiseSection* noise = noise_of(r);
    v.push_back(noise && noise->probe ? noise->probe->speed_index_per_s : std::nullopt);
  }
  return v;
}

// The row's probe section: each process's index and, where every process has
// one, whether the machine's speed explains their spread in dt (the rule of
// reports/stats/machine_speed.h); its cause joins the row's noise causes.
ProbeDoc probe_section(const std::vector<RungReport>& reports, const std::vector<double>& dt,
                       std::vector<std::string>& causes) {
  ProbeDoc section;
  section.speed_index_per_s = probe_indices(reports);
  std::vector<double> speeds;
  for (const auto& v : section.speed_index_per_s)
    if (v) speeds.push_back(*v);
  if (speeds.size() != dt.size()) return section;
  if (const auto s = probe_spread(dt, speeds, kQuietCvLimit)) {
    section.half_range_pct = s->probe_half_range_pct;
    section.dt_half_range_pct = s->dt_half_range_pct;
    section.correlation_with_dt = s->correlation;
    section.explains_dt_spread = s->explains;
    if (s->explains) causes.push_back(s->cause);
  }
  return section;
}

}  // namespace

json summary_row(const Cell& c, const std::vector<RungReport>& reports, const std::vector<int>& rounds,
                 const RowContext& ctx) {
  const std::string& side = ctx.side;
  const RungReport& first = reports.front();
  size_t bad = 0;
  while (bad < reports.size() && reports[bad].status == "ok") ++bad;
  const RungReport& deciding = bad < reports.size() ? reports[bad] : first;
  SummaryRowDoc row = row_doc(c, deciding.status, ctx);
  row.report = relative_report(c, rounds.front(), side);
  const std::vector<int64_t> rounds64(rounds.begin(), rounds.end());
  if (reports.size() > 1) {
    RepeatsDoc repeats;
    repeats.count = int64_t(reports.size());
    for (int k : rounds) repeats.reports.push_back(relative_report(c, k, side));
    repeats.rounds = rounds64;
    if (bad < reports.size()) repeats.failed_repeat = rounds[bad];
    row.repeats = repeats;
  }
  if (!ctx.not_run.empty()) {  // listed, not counted as a failure
    if (!row.repeats) row.repeats = RepeatsDoc{int64_t(reports.size()), {*row.report}, std::nullopt, std::nullopt, rounds64};
    row.repeats->not_run = std::vector<int64_t>(ctx.not_run.begin(), ctx.not_run.end());
  }
  if (deciding.failure) row.failure = fields::to_json(*deciding.failure);
  if (row.status != "ok") return fields::to_json(row);
  // Every declared run-level figure (reports/model/report/run_figures.cpp), across processes.
  std::vector<const RungReport*> processes;
  for (const auto& r : reports) processes.push_back(&r);
  const CellFigures figures = cell_figures_of(processes);
  row.per_process = figures.per_process;
  row.rounds = rounds64;  // the round each process ran in, parallel to per_process
  row.markers = figures.markers;
  const size_t n = reports.size();
  row.sample = n == 1 ? fmt::format("the median of {} measured steps of one process", first.steps->step.size())
                      : fmt::format("the median of {} per-process medians", n);
  std::vector<double> dt_cv;
  for (const auto& r : reports) dt_cv.push_back(r.summary_value("dt_ms", &Summary::cv).value());
  const double steps_cv = median(dt_cv);
  row.dt_ms_cv = steps_cv;
  std::optional<double> processes_cv;
  const std::vector<std::vector<std::string>> per_process_causes = causes_per_process(reports);
  std::vector<std::string> causes = noise_causes_of(per_process_causes);
  if (n > 1) {
    std::vector<double> dt;  // an ok process has its step time
    for (const std::optional<double>& v : figures.per_process.at("dt_ms_median")) dt.push_back(v.value());
    processes_cv = summarize(dt).cv;
    row.dt_ms_process_medians = dt;
    row.dt_ms_process_cv = *processes_cv;
    row.probe = probe_section(reports, dt, causes);
  }
  row.noise = noise_verdict(steps_cv, processes_cv, std::move(causes));
  if (n > 1) row.noise->per_process_causes = per_process_causes;
  row.peak_kind = first.memory->measured.peak_kind;
  row.op_counts = *first.op_counts;
  std::map<std::string, bool> effective;
  for (const auto& [name, sw] : *first.switches)
    if (sw.enabled) effective[name] = sw.took_effect();
  row.effective = effective;
  std::vector<SlowRank> slow;
  for (const auto& r : reports)
    if (r.ddp && *r.ddp && (*r.ddp)->slow_rank) slow.push_back(*(*r.ddp)->slow_rank);
  if (!slow.empty()) row.slow_rank = slow;
  json out = fields::to_json(row);
  for (const auto& [key, value] : figures.values) out[key] = fields::to_json(value);
  return out;
}

}  // namespace ladder
