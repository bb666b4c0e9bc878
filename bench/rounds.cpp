// bench/rounds.cpp: see rounds.h.
#include "bench/rounds.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ladder {

using nlohmann::json;

namespace {

// The sides of a round in the order they run: A then B in odd rounds, B then
// A in even ones; one unnamed side outside an A/B run.
std::vector<std::string> sides_in_order(const RunnerOptions& o, int round) {
  if (o.sides.empty()) return {""};
  std::vector<std::string> sides = o.sides;
  if (round % 2 == 0) std::reverse(sides.begin(), sides.end());
  return sides;
}

// A row's cell id without its side ("B/fp32" -> "fp32").
std::string cell_id(const json& row) {
  const std::string cell = row["cell"].get<std::string>(), side = row.value("side", "");
  return side.empty() ? cell : cell.substr(side.size() + 1);
}

// The half-width of row[key]'s interval, in % of the ratio (infinite without one).
double half_width_pct(const json& row, const std::string& key) {
  const json& r = row.value(key, json());
  const json& i = row.value(key + "_interval", json());
  if (!r.is_number() || !i.is_array()) return std::numeric_limits<double>::infinity();
  const double v = r.get<double>();
  return 100 * std::max(i[1].get<double>() / v - 1, 1 - i[0].get<double>() / v);
}

// The ratios of a row that --repeat auto narrows in this run's mode, each
// with the row key it is under and the key naming the cell it is against.
std::vector<std::pair<const char*, const char*>> judged_ratios(const json& row, const RunnerOptions& o) {
  if (!o.sides.empty()) return {{"b_over_a", "b_over_a_against"}};
  if (o.mode != "ablation") return {{"speedup_vs_fp32", "speedup_vs_fp32_against"},
                                    {"speedup_vs_previous", "speedup_vs_previous_against"}};
  const std::string rung = row.value("rung", "");
  if (rung.rfind("fp32+", 0) == 0) return {{"speedup_vs_fp32", "speedup_vs_fp32_against"}};
  if (rung.rfind("top-", 0) == 0 || rung.rfind("top+", 0) == 0) return {{"effect_at_top", "effect_at_top_against"}};
  return {};
}

}  // namespace

std::vector<Job> first_rounds(const std::vector<Cell>& cells, const RunnerOptions& o) {
  std::vector<Job> jobs;
  for (int k = 1; k <= o.repeats; ++k)
    for (const auto& cell : cells)
      if (cell.runnable && (k == 1 || cell.role != "parity"))
        for (const auto& side : sides_in_order(o, k)) jobs.push_back({&cell, k, side});
  return jobs;
}

std::vector<WideRatio> wide_ratios(const json& rows, const RunnerOptions& o) {
  std::vector<WideRatio> wide;
  for (const auto& row : rows) {
    if (row.value("status", "") != "ok" || row.contains("peer")) continue;
    if (!o.sides.empty() && row.value("side", "") != "B") continue;  // B over A lives on B's rows
    for (const auto& [key, against] : judged_ratios(row, o)) {
      if (!row.contains(against) || !row[against].is_string()) continue;  // fp32 itself, the first rung
      const double half = half_width_pct(row, key);
      if (half <= o.target_ci_pct) continue;
      WideRatio w;
      w.cell = cell_id(row);
      w.side = row.value("side", "");
      w.against = row[against].get<std::string>();
      w.against_side = o.sides.empty() ? "" : "A";
      w.what = key;
      w.half_width_pct = half;
      wide.push_back(w);
    }
  }
  return wide;
}

std::vector<Job> next_round(const std::vector<Cell>& cells, const std::vector<WideRatio>& wide, int round,
                            const RunnerOptions& o) {
  std::set<std::string> wanted;  // cell ids; with sides, both sides of each
  for (const auto& w : wide) {
    wanted.insert(w.cell);
    wanted.insert(w.against);
  }
  std::vector<Job> jobs;
  for (const auto& cell : cells)
    if (cell.runnable && cell.role == "measure" && wanted.count(cell.id))
      for (const auto& side : sides_in_order(o, round)) jobs.push_back({&cell, round, side});
  return jobs;
}

std::string round_line(int round, const std::vector<WideRatio>& wide, double elapsed_s, double budget_s,
                       const RunnerOptions& o) {
  std::string list;
  for (size_t i = 0; i < wide.size() && i < 6; ++i)
    list += fmt::format("{}{}{} {} {}", i ? ", " : "", wide[i].side.empty() ? "" : wide[i].side + "/", wide[i].cell,
                        wide[i].what,
                        std::isinf(wide[i].half_width_pct) ? std::string("(no interval)")
                                                           : fmt::format("+-{:.1f} %", wide[i].half_width_pct));
  if (wide.size() > 6) list += fmt::format(", and {} more", wide.size() - 6);
  return fmt::format("[auto] round {}: {} ratio(s) wider than +-{} %: {}; {:.1f} of {:.1f} min", round, wide.size(),
                     o.target_ci_pct, list, elapsed_s / 60, budget_s / 60);
}

json auto_summary(const std::vector<WideRatio>& wide, int rounds, const std::string& stopped, double budget_s,
                  double elapsed_s, const RunnerOptions& o) {
  json unresolved = json::array();
  for (const auto& w : wide)
    unresolved.push_back({{"cell", w.side.empty() ? w.cell : w.side + "/" + w.cell},
                          {"ratio", w.what},
                          {"against", w.against},
                          {"half_width_pct", std::isinf(w.half_width_pct) ? json() : json(w.half_width_pct)}});
  return {{"target_ci_pct", o.target_ci_pct}, {"time_budget_s", budget_s}, {"elapsed_s", elapsed_s},
          {"rounds", rounds}, {"stopped", stopped}, {"unresolved", unresolved}};
}

std::string auto_line(const json& a) {
  std::string cells;
  for (const auto& u : a["unresolved"])
    cells += fmt::format("{}{} {}", cells.empty() ? "" : ", ", u["cell"].get<std::string>(), u["ratio"].get<std::string>());
  // Wider than the target is not unresolved: 1.53 [1.49, 1.57] excludes 1.
  return fmt::format("[auto] {} round(s) in {:.1f} min; stopped: {}{}", a["rounds"].get<int>(),
                     a["elapsed_s"].get<double>() / 60, a["stopped"].get<std::string>(),
                     cells.empty() ? std::string()
                                   : fmt::format("; still wider than +-{} %: {}", a["target_ci_pct"].get<double>(),
                                                 cells));
}

}  // namespace ladder
