// reports/render/speed_of_light_table.cpp: see speed_of_light_table.h.
#include "reports/render/speed_of_light_table.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/render/comparison_charts.h"
#include "reports/model/json_fields.h"
#include "reports/model/peer_cells.h"
#include "reports/model/report_loader.h"

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

TableCell ms_cell(const json& v) { return number_cell(v, "{:.2f}"); }

TableCell pct_cell(const json& v) {
  if (!v.is_number()) return {"-", nullptr};
  return {fmt::format("{:.0f} %", v.get<double>()), v};
}

std::string ceilings_line(const json& c) {
  std::string s = fmt::format("matmul {}", number(c, "matmul_tflops")
                                               ? fmt::format("{:.4g} TFLOP/s {}: {}", *number(c, "matmul_tflops"),
                                                             text(c, "matmul_precision"), text(c, "matmul_basis"))
                                               : std::string("not measured"));
  s += fmt::format("; memory {}", number(c, "memory_gbps") ? text(c, "memory_basis") : std::string("not measured"));
  if (number(c, "link_gbps")) s += fmt::format("; link {:.4g} GB/s: {}", *number(c, "link_gbps"), text(c, "link_basis"));
  return s;
}

}  // namespace

Line speed_of_light_verdict(const json& section) {
  const json& l = member(section, "largest_headroom");
  if (!l.is_object()) return {"no band has a floor (no ceiling was measured)", "largest headroom:"};
  // Past 100 %, how many times the floor the headroom is: "463x its floor", not "46251 %".
  const double pct = number(l, "pct_of_floor").value_or(0);
  return {fmt::format("{} {:.2f} ms ({})", layer_of(text(l, "band")).label, number(l, "headroom_ms").value_or(0),
                      pct > 100 ? fmt::format("{:.3g}x its floor", pct / 100) : fmt::format("{:.0f} % of its floor", pct)),
          "largest headroom:", Tone::kBad};
}

Table speed_of_light_table(const json& section, const std::string& rung) {
  Table t;
  t.title = fmt::format("speed of light: {} (each band's floor from the step's work and the machine's ceilings)", rung);
  t.tag = "speed_of_light";
  t.columns = {{"band", "band", "", Align::kLeft},   {"measured_ms", "measured", "ms"},
               {"floor_ms", "floor", "ms"},             {"binds", "binds", "", Align::kLeft},
               {"efficiency_pct", "efficiency", ""},    {"headroom_ms", "headroom", "ms"}};
  for (const auto& b : array_at(section, "bands")) {
    const ChartLayer l = layer_of(text(b, "band"));
    const bool above = member(b, "floor_above_measured") == json(true);
    t.rows.push_back(Row({{l.label, l.key, Tone::kPlain, l.colour},
                          ms_cell(member(b, "measured_ms")),
                          {fmt::format("{:.2f}{}", number(b, "floor_ms").value_or(0), member(b, "partial") == json(true) ? "+" : ""),
                           member(b, "floor_ms"), above ? Tone::kBad : Tone::kPlain},
                          {text(b, "binds", "-"), member(b, "binds")},
                          pct_cell(member(b, "efficiency_pct")),
                          ms_cell(member(b, "headroom_ms"))}));
  }
  const json& step = member(section, "step");
  const auto dt = number(step, "dt_ms"), floor = number(step, "floor_ms");
  t.rows.push_back(Row({{"step (median dt)", "step"},
                        ms_cell(member(step, "dt_ms")),
                        ms_cell(member(step, "floor_ms")),
                        {"", nullptr},
                        pct_cell(dt && floor && *dt > 0 ? json(100.0 * *floor / *dt) : json()),
                        ms_cell(dt && floor ? json(*dt - *floor) : json())}));
  t.notes.push_back(speed_of_light_verdict(section));
  t.notes.push_back({ceilings_line(member(section, "ceilings")), "ceilings:"});
  for (const auto& n : array_at(section, "notes")) t.notes.push_back({n.get<std::string>(), "note:", Tone::kBad});
  return t;
}

Chart speed_of_light_chart(const json& section, const std::string& rung) {
  Chart c;
  c.id = "chart-sol-" + rung;
  c.title = fmt::format("Speed of light: {}'s bands, measured against their floor (ms per step, lower is better)",
                        rung);
  c.y_title = "ms per step";
  c.unit = "ms";
  c.kind = ChartKind::kBars;
  c.y_covers = {0};
  c.series = {{"measured", {}}, {"floor", {}}};
  for (const auto& b : array_at(section, "bands")) {
    const ChartLayer l = layer_of(text(b, "band"));
    c.categories.push_back(l.label);
    const auto measured = number(b, "measured_ms"), floor = number(b, "floor_ms");
    const auto efficiency = number(b, "efficiency_pct");
    const std::string eff = efficiency ? fmt::format("{:.0f} % efficiency", *efficiency) : "no efficiency";
    ChartPoint m, f;
    m.value = measured;
    f.value = floor;
    if (measured)
      m.hover = fmt::format("measured {:.2f} ms, {}", *measured,
                            floor ? fmt::format("{:.2f} ms above its floor ({})", *measured - *floor, eff) : eff);
    if (floor)
      f.hover = fmt::format("floor {:.2f} ms{}, bound by {}", *floor,
                            member(b, "partial") == json(true) ? " (partial: some of its work has no floor)" : "",
                            text(b, "binds", "-"));
    if (!measured) m.status = "not measured";
    if (!floor) f.status = "no floor";
    c.series[0].points.push_back(std::move(m));
    c.series[1].points.push_back(std::move(f));
  }
  c.empty_note = "no band was measured";
  return c;
}

std::optional<SpeedOfLightView> top_rung_speed_of_light(const json& summary, const std::string& run_dir) {
  const json& rows = array_at(summary, "rows");
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    const std::string cell = text(*it, "cell", "");
    if (text(*it, "status", "") != "ok" || is_peer_cell(cell) || !member(*it, "report").is_string()) continue;
    const auto path = std::filesystem::path(run_dir) / (*it)["report"].get<std::string>();
    if (!std::filesystem::exists(path)) continue;
    const RungReport report = read_rung_report(path.string());
    const json section = report.speed_of_light ? *report.speed_of_light : json();
    if (section.is_object() && !section.contains("unavailable"))
      return SpeedOfLightView{speed_of_light_table(section, cell), speed_of_light_chart(section, cell)};
  }
  return std::nullopt;
}

Table speed_of_light_comparison(const std::vector<json>& sections, const std::vector<std::string>& labels,
                                const std::string& rung) {
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
    for (const auto& b : array_at(s, "bands"))
      if (std::find(bands.begin(), bands.end(), text(b, "band")) == bands.end()) bands.push_back(text(b, "band"));
  auto band_of = [](const json& s, const std::string& key) -> const json& {
    static const json kNull;
    for (const auto& b : array_at(s, "bands"))
      if (text(b, "band") == key) return b;
    return kNull;
  };
  for (const auto& key : bands) {
    const ChartLayer l = layer_of(key);
    Row r({{l.label, l.key, Tone::kPlain, l.colour}});
    for (const auto& s : sections) {
      const json& b = band_of(s, key);
      r.cells.push_back(ms_cell(member(b, "measured_ms")));
      r.cells.push_back(ms_cell(member(b, "floor_ms")));
      r.cells.push_back(pct_cell(member(b, "efficiency_pct")));
    }
    t.rows.push_back(std::move(r));
  }
  for (size_t i = 0; i < sections.size(); ++i)
    t.notes.push_back({speed_of_light_verdict(sections[i]).text, labels[i] + " largest headroom:"});
  return t;
}

}  // namespace ladder
