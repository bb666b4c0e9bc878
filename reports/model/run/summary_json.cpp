// reports/model/run/summary_json.cpp: summary.json to structs and the ratios back (see
// summary_json.h). The only place that reads a summary's rows by key.
#include "reports/model/run/summary_json.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "reports/model/json_fields.h"
#include "reports/model/run/peer_cells.h"
#include "reports/model/run/ratios.h"
#include "reports/model/report/run_figures.h"
#include "reports/model/run/summary_doc.h"
#include "variants/config/rungs.h"

namespace ladder {

using nlohmann::json;
using json_fields::array_at;
using json_fields::member;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::optional<std::string> opt_text(const json& obj, const std::string& key) {
  const json& v = member(obj, key);
  return v.is_string() ? std::optional<std::string>(v.get<std::string>()) : std::nullopt;
}

std::optional<double> opt_number(const json& obj, const std::string& key) { return json_fields::number(obj, key); }

std::string text_or(const json& obj, const std::string& key, const std::string& fallback = "") {
  return json_fields::text(obj, key, fallback);
}

double number_or(const json& obj, const std::string& key, double fallback = 0) {
  return opt_number(obj, key).value_or(fallback);
}

RowParity read_parity(const json& p) {
  RowParity out;
  out.recorded = p.is_object();
  out.status = opt_text(p, "status");
  out.worst_quantity = opt_text(p, "worst_quantity");
  out.worst_rel_diff = opt_number(p, "worst_rel_diff");
  out.rtol = number_or(p, "rtol");
  out.reason = opt_text(p, "reason");
  return out;
}

RowNoise read_noise(const json& n) {
  RowNoise out;
  out.recorded = n.is_object();
  if (member(n, "quiet").is_boolean()) out.quiet = member(n, "quiet").get<bool>();
  out.cv_limit = number_or(n, "cv_limit");
  out.steps_cv = number_or(n, "steps_cv");
  out.processes_cv = opt_number(n, "processes_cv");
  for (const auto& c : array_at(n, "causes"))
    if (c.is_string()) out.causes.push_back(c.get<std::string>());
  for (const auto& p : array_at(n, "per_process_causes")) {
    out.per_process_causes.emplace_back();
    for (const auto& c : p.is_array() ? p : json::array())
      if (c.is_string()) out.per_process_causes.back().push_back(c.get<std::string>());
  }
  return out;
}

// The per-process tokens/s and their rounds; an older summary's row: its one value, round 1.
ProcessSamples read_samples(const json& row) {
  ProcessSamples s;
  const json& values = array_at(member(row, "per_process"), "tokens_per_s_median");
  const json& rounds = array_at(row, "rounds");
  for (size_t k = 0; k < values.size(); ++k) {
    s.values.push_back(values[k].is_number() ? values[k].get<double>() : kNaN);
    s.rounds.push_back(k < rounds.size() && rounds[k].is_number() ? rounds[k].get<int>() : int(k) + 1);
  }
  if (values.empty() && opt_number(row, "tokens_per_s_median")) {
    s.values.push_back(*opt_number(row, "tokens_per_s_median"));
    s.rounds.push_back(1);
  }
  return s;
}

// A kind's ratio as recorded, or nothing (a kind that tests needs its p too).
std::optional<RowRatio> read_ratio(const RatioKind& kind, const json& row) {
  RowRatio r;
  if (kind.layout == RatioLayout::kPeerObject) {
    const json& o = member(row, kind.key);
    if (!o.is_object()) return std::nullopt;
    r.value = opt_number(o, "tokens_per_s_ratio");
    r.interval = json_fields::interval(member(o, "tokens_per_s_interval"));
    r.against = r.value ? text_or(o, "rung") : "";
    return r;
  }
  const std::string key = kind.key;
  if (!row.is_object() || !row.contains(key) || (kind.tests && !row.contains(key + "_p"))) return std::nullopt;
  r.value = opt_number(row, key);
  r.interval = json_fields::interval(member(row, key + "_interval"));
  r.against = text_or(row, key + "_against");
  if (kind.tests) r.p = opt_number(row, key + "_p");
  return r;
}

json interval_json(const std::optional<std::pair<double, double>>& i) {
  return i ? json::array({i->first, i->second}) : json();
}

std::optional<RepeatAuto> read_repeat_auto(const json& a) {
  if (!a.is_object()) return std::nullopt;
  RepeatAuto out;
  out.rounds = int(number_or(a, "rounds"));
  out.elapsed_s = number_or(a, "elapsed_s");
  out.target_ci_pct = number_or(a, "target_ci_pct");
  out.time_budget_s = number_or(a, "time_budget_s");
  out.stopped = text_or(a, "stopped", "?");
  for (const auto& u : array_at(a, "unresolved"))
    out.unresolved.push_back(text_or(u, "cell", "?") + " " + text_or(u, "ratio", "?"));
  return out;
}

RunRoofline read_roofline(const json& section) {
  RunRoofline out;
  if (section.is_null()) return out;  // a summary of a build before the run's roofline
  const SummaryRoofline r = fields::from_json<SummaryRoofline>(section, "summary.json: roofline");
  out.reason = r.reason;
  if (!r.ok()) return out;
  out.ok = true;
  out.device = r.measured->device;
  out.figures = roofline_figures(*r.measured);
  out.memory = roofline_memory_figures(*r.measured);
  if (const PrecisionRoofline* bf16 = r.measured->precision("bf16"))
    out.bf16_emulated_evidence = bf16->emulated_evidence;
  return out;
}

}  // namespace

SummaryRow read_summary_row(const json& row) {
  SummaryRow r;
  r.cell = text_or(row, "cell");
  r.rung = text_or(row, "rung");
  r.side = text_or(row, "side");
  r.preset = text_or(row, "preset");
  r.batch = long(number_or(row, "batch"));
  r.seq = long(number_or(row, "seq"));
  r.status = text_or(row, "status");
  r.reason = text_or(row, "reason");
  if (const json& f = member(row, "failure"); f.is_object())
    r.failure = text_or(f, "reason") + " " + text_or(f, "message");
  if (row.is_object() && row.contains("peer")) r.peer = text_or(member(row, "peer"), "name", "?");
  r.tokens_per_s = read_samples(row);
  for (const RunFigure& f : run_figures())
    if (const json& v = member(row, f.key); v.is_number()) r.figures[f.key] = {v.get<double>(), v.is_number_integer()};
  for (const auto& [key, m] : member(row, "markers").items())
    if (m.is_string()) r.markers[key] = m.get<std::string>();
  r.parity = read_parity(member(row, "parity"));
  r.noise = read_noise(member(row, "noise"));
  for (const auto& [name, e] : member(row, "effective").items())
    if (e.is_boolean()) r.effective[name] = e.get<bool>();
  if (const auto n = opt_number(member(row, "repeats"), "count")) r.processes = int(*n);
  if (member(row, "disturbed").is_array())
    r.disturbed = fields::from_json<std::vector<RowDisturbed>>(member(row, "disturbed"), "summary row: disturbed");
  for (const RatioKind& kind : ratio_kinds())
    if (auto ratio = read_ratio(kind, row)) r.ratios[kind.key] = *ratio;
  if (member(row, "slow_rank").is_array())
    r.slow_rank = fields::from_json<std::vector<SlowRank>>(member(row, "slow_rank"), "summary row: slow_rank");
  r.report = opt_text(row, "report");
  for (const auto& f : json_fields::array_at(member(row, "repeats"), "reports"))
    if (f.is_string()) r.repeat_reports.push_back(f.get<std::string>());
  return r;
}

std::vector<SummaryRow> read_summary_rows(const json& rows) {
  std::vector<SummaryRow> out;
  if (rows.is_array())
    for (const auto& row : rows) out.push_back(read_summary_row(row));
  return out;
}

RunSummary read_run_summary(const json& summary) {
  RunSummary s;
  s.run_id = text_or(summary, "run_id");
  s.status = text_or(summary, "status");
  s.started_at = text_or(summary, "started_at");
  s.finished_at = text_or(summary, "finished_at");
  s.mode = text_or(summary, "mode");
  if (member(summary, "ab").is_object()) s.ab_spec = text_or(member(summary, "ab"), "spec", "?");
  s.peers_compared_with = text_or(member(summary, "peers"), "compared_with", kPeersComparedWithWhenUnsaid);
  s.repeats = int(number_or(summary, "repeats", 1));
  s.repeat_auto = read_repeat_auto(member(summary, "repeat_auto"));
  s.roofline = read_roofline(member(summary, "roofline"));
  if (member(summary, "resolution").is_object()) s.resolution = text_or(member(summary, "resolution"), "line");
  const json& missing = member(summary, "missing");
  s.missing_count = missing.is_array() || missing.is_object() ? missing.size() : 0;
  s.missing = missing.dump();
  s.stopped_because = opt_text(summary, "stopped_because");
  s.rows = read_summary_rows(member(summary, "rows"));
  return s;
}

std::string roofline_figures(const RooflineFile& roofline) {
  std::string figures;
  for (const auto& [name, e] : roofline.precisions)
    figures += fmt::format("{}{} {:.3g}", figures.empty() ? "" : ", ", name, e.best.tflops);
  return figures;
}

std::string roofline_memory_figures(const RooflineFile& roofline) {
  if (!roofline.memory || roofline.memory->sizes.empty()) return "";
  const BandwidthAtSize& dram = roofline.memory->dram();
  const std::string update = dram.update_gbps ? fmt::format(", update {:.3g}", *dram.update_gbps) : "";
  return fmt::format("DRAM copy {:.3g}, triad {:.3g}{} GB/s ({:.0f} MiB)", dram.copy_gbps, dram.triad_gbps, update,
                     double(dram.working_set_bytes) / double(1 << 20));
}

void add_ratios(json& json_rows) {
  std::vector<SummaryRow> rows = read_summary_rows(json_rows);
  compute_ratios(rows);
  write_ratios(rows, json_rows);
}

void write_ratios(const std::vector<SummaryRow>& rows, json& json_rows) {
  for (size_t i = 0; i < rows.size() && i < json_rows.size(); ++i) {
    if (!rows[i].disturbed.empty()) json_rows[i]["disturbed"] = fields::to_json(rows[i].disturbed);
    else if (json_rows[i].is_object()) json_rows[i].erase("disturbed");
    for (const RatioKind& kind : ratio_kinds()) {
      const auto it = rows[i].ratios.find(kind.key);
      if (it == rows[i].ratios.end()) continue;
      const RowRatio& r = it->second;
      json& row = json_rows[i];
      const std::string key = kind.key;
      if (kind.layout == RatioLayout::kPeerObject) {
        const std::string rung = peer_base_rung().name;
        LadderVsPeerDoc doc;
        doc.rung = rung;
        doc.tokens_per_s_ratio = r.value;
        doc.tokens_per_s_interval = interval_json(r.interval);
        doc.note = r.value ? fmt::format("tokens/s of ladder {} over this peer's", rung)
                           : fmt::format("no ok {} row of this shape in the run", rung);
        row[key] = fields::to_json(doc);
        continue;
      }
      row[key] = r.value ? json(*r.value) : json();
      row[key + "_interval"] = interval_json(r.interval);
      row[key + "_against"] = r.against.empty() ? json() : json(r.against);
      if (kind.tests) row[key + "_p"] = r.p ? json(*r.p) : json();
    }
  }
}

}  // namespace ladder
