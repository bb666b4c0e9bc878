// reports/render/sections/speed_of_light_table.cpp: see speed_of_light_table.h.
#include "reports/render/sections/speed_of_light_table.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/render/sections/comparison_charts.h"
#include "reports/model/json_fields.h"
#include "reports/model/run/peer_cells.h"
#include "reports/model/report/report_loader.h"

namespace ladder {
namespace {

using json = nlohmann::json;
using namespace json_fields;

// The band's label and colour as the breakdown charts show it.
ChartLayer layer_of(const std::string& key) {
  for (const auto& l : breakdown_layers())
    if (l.key == key) return l;
  return {key, key, ""};
}

// A figure in ms; "-" where there is none (a band one input lacks).
TableCell ms_cell(const std::optional<double>& v) { return number_cell(v, "{:.2f}"); }

TableCell pct_cell(const std::optional<double>& v) {
  if (!v) return {"-", nullptr};
  return {fmt::format("{:.0f} %", *v), *v};
}

std::string ceilings_line(const SolCeilingsSection& c) {
  std::string s = fmt::format("matmul {}", c.matmul_tflops ? fmt::format("{:.4g} TFLOP/s {}: {}", *c.matmul_tflops,
                                                                          c.matmul_precision, c.matmul_basis)
                                                           : std::string("not measured"));
  s += fmt::format("; memory {}", c.memory_gbps ? c.memory_basis : std::string("not measured"));
  if (c.link_gbps) s += fmt::format("; link {:.4g} GB/s: {}", *c.link_gbps, c.link_basis);
  return s;
}

}  // namespace

Line speed_of_light_verdict(const SpeedOfLightSection& section) {
  if (!section.largest_headroom) return {"no band has a floor (no ceiling was measured)", "largest headroom:"};
  const SolHeadroomSection& l = *section.largest_headroom;
  // Past 100 %, how many times the floor the headroom is: "463x its floor", not "46251 %".
  const double pct = l.pct_of_floor;
  return {fmt::format("{} {:.2f} ms ({})", layer_of(l.band).label, l.headroom_ms,
                      pct > 100 ? fmt::format("{:.3g}x its floor", pct / 100) : fmt::format("{:.0f} % of its floor", pct)),
          "largest headroom:", Tone::kBad};
}

Table speed_of_light_table(const SpeedOfLightSection& section, const std::string& rung) {
  Table t;
  t.title = fmt::format("speed of light: {} (each band's floor from the step's work and the machine's ceilings)", rung);
  t.tag = "speed_of_light";
  t.columns = {{"band", "band", "", Align::kLeft},   {"measured_ms", "measured", "ms"},
               {"floor_ms", "floor", "ms"},             {"binds", "binds", "", Align::kLeft},
               {"efficiency_pct", "efficiency", ""},    {"headroom_ms", "headroom", "ms"}};
  for (const SolBandSection& b : section.bands) {
    const ChartLayer l = layer_of(b.band);
    t.rows.push_back(Row({{l.label, l.key, Tone::kPlain, l.colour},
                          ms_cell(b.measured_ms),
                          {fmt::format("{:.2f}{}", b.floor_ms, b.partial ? "+" : ""), b.floor_ms,
                           b.floor_above_measured ? Tone::kBad : Tone::kPlain},
                          {b.binds.value_or("-"), b.binds ? json(*b.binds) : json()},
                          pct_cell(b.efficiency_pct),
                          ms_cell(b.headroom_ms)}));
  }
  const SolStepSection& step = section.step;
  t.rows.push_back(Row({{"step (median dt)", "step"},
                        ms_cell(step.dt_ms),
                        ms_cell(step.floor_ms),
                        {"", nullptr},
                        pct_cell(step.dt_ms > 0 ? std::optional<double>(100.0 * step.floor_ms / step.dt_ms)
                                                : std::nullopt),
                        ms_cell(step.dt_ms - step.floor_ms)}));
  t.notes.push_back(speed_of_light_verdict(section));
  t.notes.push_back({ceilings_line(section.ceilings), "ceilings:"});
  for (const auto& n : section.notes) t.notes.push_back({n, "note:", Tone::kBad});
  return t;
}

Chart speed_of_light_chart(const SpeedOfLightSection& section, const std::string& rung) {
  Chart c;
  c.id = "chart-sol-" + rung;
  c.title = fmt::format("Speed of light: {}'s bands, measured against their floor (ms per step, lower is better)",
                        rung);
  c.y_title = "ms per step";
  c.unit = "ms";
  c.kind = ChartKind::kBars;
  c.y_covers = {0};
  c.series = {{"measured", {}}, {"floor", {}}};
  for (const SolBandSection& b : section.bands) {
    const ChartLayer l = layer_of(b.band);
    c.categories.push_back(l.label);
    const std::string eff =
        b.efficiency_pct ? fmt::format("{:.0f} % efficiency", *b.efficiency_pct) : "no efficiency";
    ChartPoint m, f;
    m.value = b.measured_ms;
    f.value = b.floor_ms;
    m.hover = fmt::format("measured {:.2f} ms, {:.2f} ms above its floor ({})", b.measured_ms,
                          b.measured_ms - b.floor_ms, eff);
    f.hover = fmt::format("floor {:.2f} ms{}, bound by {}", b.floor_ms,
                          b.partial ? " (partial: some of its work has no floor)" : "", b.binds.value_or("-"));
    c.series[0].points.push_back(std::move(m));
    c.series[1].points.push_back(std::move(f));
  }
  c.empty_note = "no band was measured";
  return c;
}

std::optional<SpeedOfLightView> top_rung_speed_of_light(const RunSummary& run, const std::string& run_dir) {
  for (auto it = run.rows.rbegin(); it != run.rows.rend(); ++it) {
    const std::string& cell = it->cell;
    if (!it->ok() || is_peer_cell(cell) || !it->report) continue;
    const auto path = std::filesystem::path(run_dir) / *it->report;
    if (!std::filesystem::exists(path)) continue;
    const RungReport report = read_rung_report(path.string());
    if (const SpeedOfLightSection* section = sol_table(report.speed_of_light))
      return SpeedOfLightView{speed_of_light_table(*section, cell), speed_of_light_chart(*section, cell)};
  }
  return std::nullopt;
}

Table speed_of_light_comparison(const std::vector<SpeedOfLightSection>& sections,
                                const std::vector<std::string>& labels, const std::string& rung) {
  Table t;
  t.title = fmt::format("speed of light of {}: each input's measured ms, floor and efficiency per band", rung);
  t.tag = "speed_of_light";
  t.columns.push_back({"band", "band", "", Align::kLeft});
  for (const auto& label : labels) {
    t.columns.push_back({label + "_measured_ms", label + " measured", "ms"});
    t.columns.push_back({label + "_floor_ms", label + " floor", "ms"});
    t.columns.push_back({label + "_efficiency_pct", label + " efficiency", ""});
  }
  std::vector<std::string> bands;
  for (const auto& s : sections)
    for (const auto& b : s.bands)
      if (std::find(bands.begin(), bands.end(), b.band) == bands.end()) bands.push_back(b.band);
  auto band_of = [](const SpeedOfLightSection& s, const std::string& key) -> const SolBandSection* {
    for (const auto& b : s.bands)
      if (b.band == key) return &b;
    return nullptr;
  };
  for (const auto& key : bands) {
    const ChartLayer l = layer_of(key);
    Row r({{l.label, l.key, Tone::kPlain, l.colour}});
    for (const auto& s : sections) {
      const SolBandSection* b = band_of(s, key);
      r.cells.push_back(ms_cell(b ? std::optional<double>(b->measured_ms) : std::nullopt));
      r.cells.push_back(ms_cell(b ? std::optional<double>(b->floor_ms) : std::nullopt));
      r.cells.push_back(pct_cell(b ? b->efficiency_pct : std::nullopt));
    }
    t.rows.push_back(std::move(r));
  }
  for (size_t i = 0; i < sections.size(); ++i)
    t.notes.push_back({speed_of_light_verdict(sections[i]).text, labels[i] + " largest headroom:"});
  return t;
}

}  // namespace ladder
