// reports/render/sections/rank_tables.cpp: see rank_tables.h.
#include "reports/render/sections/rank_tables.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "profiler/common/fields.h"
#include "reports/model/report/report_loader.h"
#include "reports/render/sections/band_tables.h"
#include "reports/stats/stats.h"

namespace ladder {

namespace {


// The phases drawn, bottom first: the compute phases, then the wait.
const std::vector<ChartLayer>& phase_layers() {
  static const std::vector<ChartLayer> kLayers = {
      {"data", "data", "#bab0ac"},
      {"forward", "forward", "#4e79a7"},
      {"backward", "backward", "#f28e2b"},
      {"optimizer", "optimizer", "#59a14f"},
      {"communication", "communication wait", "#b07aa1"},
  };
  return kLayers;
}

const std::vector<double>& phase_of(const RankPhaseSteps& p, const std::string& key) {
  if (key == "data") return p.data;
  if (key == "forward") return p.forward;
  if (key == "backward") return p.backward;
  if (key == "optimizer") return p.optimizer;
  return p.communication;
}

struct Rank {
  int64_t rank = 0;
  std::string host;
  RankPhaseSteps phases;
  std::optional<std::map<std::string, double>> bands;  // its op breakdown's, where profiled
  std::optional<double> dt_ms;                         // its median step time
};

std::string rank_label(const Rank& r, const std::optional<SlowRank>& slow) {
  const bool marked = slow && slow->resolved && slow->rank == r.rank;
  return fmt::format("rank {}{}", r.rank, marked ? " (slowest)" : "");
}

Table phases_table(const std::vector<Rank>& ranks, const std::optional<SlowRank>& slow, const std::string& cell,
                   const std::string& basis) {
  Table t;
  t.title = fmt::format("{}: each rank's phases, median ms per step ({})", cell, basis);
  t.tag = "ranks";
  t.columns = {{"rank", "rank", "", Align::kLeft}, {"host", "host", "", Align::kLeft}};
  for (const auto& l : phase_layers()) t.columns.push_back({l.key + "_ms", l.label, ""});
  t.columns.push_back({"compute_ms", "compute", ""});
  for (const Rank& r : ranks) {
    Row row;
    const bool marked = slow && slow->resolved && slow->rank == r.rank;
    row.cells.push_back({rank_label(r, slow), r.rank, marked ? Tone::kBad : Tone::kPlain});
    row.cells.push_back({r.host, r.host});
    double compute = 0;
    for (const auto& l : phase_layers()) {
      const double ms = median(phase_of(r.phases, l.key));
      if (l.key != "communication") compute += ms;
      row.cells.push_back(number_cell(ms, "{:.2f}"));
    }
    row.cells.push_back(number_cell(compute, "{:.2f}"));
    if (marked) row.tag = "differs";
    t.rows.push_back(std::move(row));
  }
  return t;
}

Chart phases_chart(const std::vector<Rank>& ranks, const std::optional<SlowRank>& slow, const std::string& cell) {
  Chart c;
  c.id = "chart-ranks-" + cell;
  c.title = fmt::format("{}: where each rank's step goes (median ms per step per phase; the others wait for the "
                        "slowest)",
                        cell);
  c.y_title = "ms per step";
  c.unit = "ms";
  c.kind = ChartKind::kStacked;
  c.layers = phase_layers();
  ChartSeries s;
  s.name = cell;
  for (const Rank& r : ranks) {
    c.categories.push_back(rank_label(r, slow));
    ChartPoint p;
    for (const auto& l : phase_layers()) p.stack.push_back(median(phase_of(r.phases, l.key)));
    s.points.push_back(std::move(p));
  }
  c.series.push_back(std::move(s));
  c.y_covers = {0};
  c.empty_note = "no per-rank phases in this report";
  return c;
}

}  // namespace

std::optional<RankView> rank_view(const RungReport& report, const std::string& cell, std::string* why) {
  const DdpSection* ddp = report.ddp && *report.ddp ? &**report.ddp : nullptr;
  if (!ddp || ddp->per_rank.size() < 2) {
    if (why) *why = cell + ": not a multi-rank report";
    return std::nullopt;
  }
  const std::optional<SlowRank> slow = ddp->slow_rank ? std::optional<SlowRank>(*ddp->slow_rank) : std::nullopt;
  const bool cpu = slow && slow->basis == "cpu_time";
  std::vector<Rank> ranks;
  for (const RankFacts& rk : ddp->rank_facts()) {
    const auto& phases = cpu ? rk.cpu_phases_ms : rk.phases_ms;
    if (!phases) {
      if (why)
        *why = fmt::format("{}: no ddp.per_rank[].{} (a report from before 2026-12-02)", cell,
                           cpu ? "cpu_phases_ms" : "phases_ms");
      return std::nullopt;
    }
    Rank r;
    r.rank = rk.rank;
    r.host = rk.host;
    r.phases = *phases;
    if (rk.bands_ms) r.bands = rk.bands_ms->by_key();
    if (const auto dt = rk.median.find("dt_ms"); dt != rk.median.end()) r.dt_ms = dt->second;
    ranks.push_back(std::move(r));
  }
  RankView v;
  v.tables.push_back(phases_table(ranks, slow,
                                  cell, cpu ? "CPU time over each rank's threads; the wait is wall time"
                                            : "device time"));
  const bool bands = std::all_of(ranks.begin(), ranks.end(), [](const Rank& r) { return r.bands.has_value(); });
  if (bands) {
    std::vector<BandSource> sources;
    for (const Rank& r : ranks) sources.push_back({rank_label(r, slow), *r.bands, r.dt_ms, 1});
    std::vector<std::pair<size_t, size_t>> differences;
    size_t k = 0;
    for (size_t i = 0; i < ranks.size(); ++i)
      if (slow && ranks[i].rank == slow->rank) k = i;
    for (size_t i = 0; i < ranks.size(); ++i)
      if (i != k) differences.emplace_back(k, i);
    v.tables.push_back(band_table(fmt::format("{}: each rank's op breakdown (ms per profiled step)", cell), sources,
                                  differences));
  }
  v.verdict = slow ? Line{fmt::format("{}: {}", cell, slow_rank_text(*slow)), "ranks:",
                          slow->resolved ? Tone::kWarn : Tone::kPlain}
                   : Line{cell + ": no verdict (too few steps)", "ranks:"};
  v.tables.front().notes.push_back(v.verdict);
  v.chart = phases_chart(ranks, slow, cell);
  return v;
}

RunRanks run_rank_views(const RunSummary& run, const std::string& run_dir) {
  RunRanks out;
  for (const SummaryRow& row : run.rows) {
    if (row.slow_rank.empty()) continue;  // not a multi-rank cell
    const std::string cell = row.cell.empty() ? "?" : row.cell;
    const std::string report = row.report.value_or(cell + "/report.json");
    try {
      std::string why;
      if (auto v = rank_view(read_rung_report((std::filesystem::path(run_dir) / report).string()), cell, &why))
        out.views.push_back(std::move(*v));
      else
        out.why += (out.why.empty() ? "" : "; ") + why;
    } catch (const std::exception& e) {
      out.why += (out.why.empty() ? "" : "; ") + cell + ": " + e.what();
    }
  }
  if (out.views.empty() && out.why.empty()) out.why = "no multi-rank cell with per-rank phases in this run";
  return out;
}

}  // namespace ladder
