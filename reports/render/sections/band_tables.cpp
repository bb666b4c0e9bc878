// reports/render/sections/band_tables.cpp: see band_tables.h.
#include "reports/render/sections/band_tables.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "reports/render/sections/comparison_charts.h"
#include "reports/model/json_fields.h"
#include "reports/model/run/peer_cells.h"
#include "reports/model/report/report_loader.h"
#include "reports/stats/stats.h"
#include "profiler/common/config_error.h"

namespace ladder {
namespace {

using json = nlohmann::json;
using namespace json_fields;

double ms_of(const BandSource& s, const std::string& band) {
  const auto it = s.categories_ms.find(band);
  return it == s.categories_ms.end() ? 0.0 : it->second;
}

// The bands the table shows, in the chart's order, then any category a newer
// breakdown adds, idle/other last; those zero in every source left out.
std::vector<ChartLayer> shown_bands(const std::vector<BandSource>& sources) {
  auto nonzero = [&](const std::string& key) {
    return std::any_of(sources.begin(), sources.end(), [&](const BandSource& s) { return ms_of(s, key) != 0.0; });
  };
  std::vector<ChartLayer> bands;
  auto listed = [&](const std::string& key) {
    return std::any_of(bands.begin(), bands.end(), [&](const ChartLayer& l) { return l.key == key; });
  };
  const ChartLayer* idle = nullptr;
  for (const auto& layer : breakdown_layers()) {
    if (layer.key == "idle_other") idle = &layer;
    else if (nonzero(layer.key)) bands.push_back(layer);
  }
  for (const auto& s : sources)
    for (const auto& [key, ms] : s.categories_ms)
      if (key != "idle_other" && !listed(key) && nonzero(key) &&
          std::none_of(breakdown_layers().begin(), breakdown_layers().end(),
                       [&, k = key](const ChartLayer& l) { return l.key == k; }))
        bands.push_back({key, key, ""});
  if (idle && nonzero(idle->key)) bands.push_back(*idle);
  return bands;
}

double sum_of(const BandSource& s, const std::vector<ChartLayer>& bands) {
  double total = 0;
  for (const auto& b : bands) total += ms_of(s, b.key);
  return total;
}

TableCell diff_cell(std::optional<double> d) {
  if (!d) return {"-", ""};
  if (std::abs(*d) < 0.005) return {"0.00", *d};  // never "-0.00"
  return {fmt::format("{:+.2f}", *d), *d, *d > 0 ? Tone::kBad : Tone::kGood};
}

// "fused-adamw" of "ladder fused-adamw", "compile" of "peer compile"; an input's label as it is.
std::string short_label(const std::string& label) {
  for (const char* lead : {"ladder ", "peer "})
    if (label.rfind(lead, 0) == 0) return label.substr(std::string(lead).size());
  return label;
}

// A label as a machine's key: "ladder fused-adamw" -> "ladder_fused-adamw".
std::string slug(std::string label) {
  std::replace(label.begin(), label.end(), ' ', '_');
  return label;
}

// The rung (sources[0]) against its peers (sources[1...], named `names`), the
// peer `against` first (compile where it ran, else the first when ""), with
// the peers that failed noted; nullopt when `against` is not among them.
std::optional<Table> peers_table(const std::string& rung, std::vector<BandSource> sources,
                                 const std::vector<std::string>& names, const std::string& against,
                                 const std::vector<std::string>& failed) {
  const std::string want = !against.empty() ? against
                           : std::count(names.begin(), names.end(), "compile") ? "compile"
                                                                                : names.front();
  const auto it = std::find(names.begin(), names.end(), want);
  if (it == names.end()) return std::nullopt;
  const auto first = sources.begin() + 1 + (it - names.begin());
  std::rotate(sources.begin() + 1, first, first + 1);
  std::vector<std::pair<size_t, size_t>> diffs;
  for (size_t i = 1; i < sources.size(); ++i) diffs.emplace_back(0, i);
  const int processes = std::max_element(sources.begin(), sources.end(), [](const BandSource& a,
                                                                            const BandSource& b) {
                          return a.processes < b.processes;
                        })->processes;
  const std::string basis = processes > 1 ? fmt::format("each band the median of {} processes' op breakdowns", processes)
                                          : std::string("op breakdown of one process");
  Table t = band_table(fmt::format("where {}'s step time goes against each peer ({}, ms per step)", rung, basis),
                       sources, diffs);
  t.notes.push_back(band_verdict(sources, 0, 1));
  if (!failed.empty()) t.notes.push_back({fmt::format("not in the table: {}", fmt::join(failed, ", ")), "bands:"});
  return t;
}

}  // namespace

BandSource median_band_source(const std::string& label, const std::vector<BandSource>& processes) {
  BandSource out{label, {}, std::nullopt};
  std::map<std::string, std::vector<double>> bands;
  std::vector<double> dts;
  for (const auto& s : processes) {
    for (const auto& [band, ms] : s.categories_ms) bands[band].push_back(ms);
    if (s.dt_ms) dts.push_back(*s.dt_ms);
  }
  for (auto& [band, values] : bands) out.categories_ms[band] = summarize(std::move(values)).median;
  if (!dts.empty()) out.dt_ms = summarize(std::move(dts)).median;
  out.processes = int(processes.size());
  return out;
}

std::optional<BandSource> band_source(const RungReport& report, const std::string& label, std::string* why) {
  const bool has = report.op_breakdown && *report.op_breakdown;
  const profiler::OpBreakdownSection* b = has ? &**report.op_breakdown : nullptr;
  std::string reason;
  if (!b) {
    reason = "no op_breakdown";
  } else if (b->unavailable) {
    reason = "op_breakdown unavailable: " + *b->unavailable;
  } else if (!b->categories_ms || b->valid == false) {
    const bool said = b->invalid_reason && *b->invalid_reason;
    reason = "no valid op_breakdown (" + (said ? **b->invalid_reason : std::string("none recorded")) + ")";
  }
  if (!reason.empty()) {
    if (why) *why = label + ": " + reason;
    return std::nullopt;
  }
  return BandSource{label, b->categories_ms->by_key(), report.summary_value("dt_ms")};
}

Table band_table(std::string title, const std::vector<BandSource>& sources,
                 const std::vector<std::pair<size_t, size_t>>& differences) {
  Table t;
  t.title = std::move(title);
  t.tag = "bands";
  t.columns.push_back({"band", "band (ms per step)", "", Align::kLeft});
  for (const auto& s : sources) t.columns.push_back({slug(s.label) + "_ms", s.label, ""});
  for (const auto& [a, b] : differences)
    t.columns.push_back({slug(sources[a].label) + "_minus_" + slug(sources[b].label) + "_ms",
                         short_label(sources[a].label) + " - " + short_label(sources[b].label), ""});
  const auto bands = shown_bands(sources);
  for (const auto& band : bands) {
    Row r;
    r.cells.push_back({band.label, band.key, Tone::kPlain, band.colour});
    for (const auto& s : sources) r.cells.push_back(number_cell(ms_of(s, band.key), "{:.2f}"));
    for (const auto& [a, b] : differences)
      r.cells.push_back(diff_cell(ms_of(sources[a], band.key) - ms_of(sources[b], band.key)));
    t.rows.push_back(std::move(r));
  }
  Row sum, dt;
  sum.cells.push_back({"sum", "sum"});
  dt.cells.push_back({"step dt (median)", "step_dt_median"});
  for (const auto& s : sources) {
    sum.cells.push_back(number_cell(sum_of(s, bands), "{:.2f}"));
    dt.cells.push_back(number_cell(s.dt_ms, "{:.2f}"));
  }
  for (const auto& [a, b] : differences) {
    sum.cells.push_back(diff_cell(sum_of(sources[a], bands) - sum_of(sources[b], bands)));
    const auto da = sources[a].dt_ms, db = sources[b].dt_ms;
    dt.cells.push_back(diff_cell(da && db ? std::optional<double>(*da - *db) : std::nullopt));
  }
  t.rows.push_back(std::move(sum));
  t.rows.push_back(std::move(dt));
  return t;
}

Line band_verdict(const std::vector<BandSource>& sources, size_t a, size_t b) {
  const auto bands = shown_bands(sources);
  const ChartLayer* worst = nullptr;
  double gap = 0;
  for (const auto& band : bands) {
    if (band.key == "idle_other") continue;
    const double d = ms_of(sources[a], band.key) - ms_of(sources[b], band.key);
    if (!worst || d > gap) worst = &band, gap = d;
  }
  const std::string head = short_label(sources[a].label) + " against " + short_label(sources[b].label) + ":";
  if (!worst) return {"no band to compare", head};
  return {fmt::format("{} {} {:+.2f} ms per step (sum {:.2f} vs {:.2f} ms)",
                      gap > 0 ? "largest gap" : "no band slower; closest", worst->label, gap,
                      sum_of(sources[a], bands), sum_of(sources[b], bands)),
          head, gap > 0 ? Tone::kBad : Tone::kGood};
}

namespace {

// A cell's column: every process of it (repeats.reports; the one report
// without --repeat), each band the median over them: one round's breakdown
// moved a band by more than the peers differ (the GEMM band at gpt2-124m on
// a 2-vCPU Xeon, 2026-11-29: 724 against compile's 800 ms in one run, 751
// against 725 in the next). nullopt, with why and exit code 1, when a
// report cannot be read or has no valid breakdown.
std::optional<BandSource> cell_band_source(const SummaryRow& row, const std::string& label, const std::string& run_dir,
                                           std::string& why, int& exit_code) {
  std::vector<std::string> files = row.repeat_reports;
  if (files.empty()) files.push_back(row.report.value_or(row.cell + "/report.json"));
  std::vector<BandSource> processes;
  for (const auto& file : files) {
    try {
      std::string reason;
      auto s = band_source(read_rung_report((std::filesystem::path(run_dir) / file).string()), label, &reason);
      if (!s) {
        why += (why.empty() ? "" : "; ") + reason + " (" + file + ")", exit_code = 1;
        return std::nullopt;
      }
      processes.push_back(std::move(*s));
    } catch (const std::exception& e) {
      why += (why.empty() ? "" : "; ") + label + ": " + e.what();
      exit_code = 1;
      return std::nullopt;
    }
  }
  return median_band_source(label, processes);
}

}  // namespace

RunBands run_band_table(const RunSummary& run, const std::string& run_dir, const std::string& against) {
  RunBands out;
  const std::string& rung = run.peers_compared_with;
  std::map<std::string, const SummaryRow*> rows;
  std::vector<std::string> peer_cells;
  for (const SummaryRow& r : run.rows) {
    rows[r.cell] = &r;
    if (is_peer_cell(r.cell)) peer_cells.push_back(r.cell);
  }
  if (peer_cells.empty()) {
    out.why = "no peer in this run (ladder run --peers eager,compile)";
    out.exit_code = 3;
    return out;
  }
  auto load = [&](const SummaryRow& row, const std::string& label) {
    return cell_band_source(row, label, run_dir, out.why, out.exit_code);
  };
  // Per shape: "<shape>/" or "" for a one-shape run.
  std::map<std::string, std::vector<std::string>> by_shape;
  for (const auto& cell : peer_cells) by_shape[shape_prefix(cell)].push_back(cell);
  std::vector<std::string> tried;
  for (auto& [shape, peers] : by_shape) {
    const auto base = rows.find(shape + rung);
    if (base == rows.end() || !base->second->ok()) {
      out.why = fmt::format("{}{}, the rung the peers are compared with, did not run ok", shape, rung);
      out.exit_code = 1;
      continue;
    }
    std::vector<BandSource> sources;
    if (auto s = load(*base->second, "ladder " + rung)) sources.push_back(std::move(*s));
    else continue;
    std::vector<std::string> names, failed;
    for (const auto& cell : peers) {
      const SummaryRow& row = *rows[cell];
      const std::string name = peer_name(cell);
      if (!row.ok()) {
        failed.push_back(fmt::format("peer {}: {}", name, row.status.empty() ? "missing" : row.status));
        tried.push_back(failed.back());
        continue;
      }
      if (auto s = load(row, "peer " + name)) sources.push_back(std::move(*s)), names.push_back(name);
    }
    if (sources.size() < 2) continue;
    if (auto t = peers_table(shape + rung, sources, names, against, failed)) {
      out.tables.push_back(std::move(*t));
    } else {
      out.why = fmt::format("no peer '{}' with a breakdown in {} (ran: {})", against, run_dir, fmt::join(names, ", "));
      out.exit_code = 3;
    }
  }
  if (out.tables.empty() && out.why.empty()) {
    out.why = fmt::format("no peer ran ok ({})", fmt::join(tried, ", "));
    out.exit_code = 3;
  }
  if (!out.tables.empty()) out.exit_code = 0;
  return out;
}

}  // namespace ladder
