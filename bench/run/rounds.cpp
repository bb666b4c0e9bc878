// bench/run/rounds.cpp: see rounds.h.
#include "bench/run/rounds.h"

#include "reports/stats/inference.h"
#include "reports/stats/stats.h"
#include "reports/model/run/ratios.h"

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

// No verdict calls a change below compare's default noise threshold.
constexpr double kResolutionFloorPct = 1.0;

// The half-width of a ratio's interval, in % of the ratio (infinite without one).
double half_width_pct(const RowRatio& r) {
  if (!r.value || !r.interval) return std::numeric_limits<double>::infinity();
  return 100 * std::max(r.interval->second / *r.value - 1, 1 - r.interval->first / *r.value);
}

// Calls fn(row, kind, ratio) for each ratio the run judges (RatioKind::judged)
// that is against another cell (not fp32's own, nor the first rung's).
template <class F>
void for_each_judged_ratio(const std::vector<SummaryRow>& rows, const RunnerOptions& o, F fn) {
  const RunKind run{o.mode == "ablation", !o.sides.empty()};
  for (const auto& row : rows) {
    if (!row.ok() || row.is_peer()) continue;
    for (const RatioKind& kind : ratio_kinds()) {
      const auto it = row.ratios.find(kind.key);
      if (kind.judged(run, row) && it != row.ratios.end() && !it->second.against.empty()) fn(row, kind, it->second);
    }
  }
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

std::vector<WideRatio> wide_ratios(const std::vector<SummaryRow>& rows, const RunnerOptions& o) {
  std::vector<WideRatio> wide;
  for_each_judged_ratio(rows, o, [&](const SummaryRow& row, const RatioKind& kind, const RowRatio& r) {
    const double half = half_width_pct(r);
    if (half <= o.target_ci_pct) return;
    WideRatio w;
    w.cell = row.bare_cell();
    w.side = row.side;
    w.against = r.against;
    w.against_side = o.sides.empty() ? "" : "A";
    w.what = kind.key;
    w.half_width_pct = half;
    wide.push_back(w);
  });
  return wide;
}

std::optional<Resolution> resolvable_change(const std::vector<SummaryRow>& rows, const RunnerOptions& o,
                                            int rounds) {
  std::vector<double> changes;
  for_each_judged_ratio(rows, o, [&](const SummaryRow& row, const RatioKind& kind, const RowRatio& r) {
    const double half = half_width_pct(r), df = ratio_df(rows, row, kind);
    const double n = double(row.tokens_per_s.rounds.size());
    if (std::isinf(half) || df < 1 || n < 2 || rounds < 2) return;
    // s / sqrt(n) on the log scale, from the interval's half-width now.
    const double se = std::log1p(half / 100) / student_t_quantile(0.975, df);
    const double df_then = df * double(rounds - 1) / (n - 1);  // as rounds add processes to the design
    const double change = se * std::sqrt(n / double(rounds)) *
                          (student_t_quantile(0.975, df_then) + student_t_quantile(0.80, df_then));
    changes.push_back(std::max(kResolutionFloorPct, 100 * std::expm1(change)));
  });
  if (changes.empty()) return std::nullopt;
  Resolution r;
  r.change_pct = summarize(changes).median;
  r.lo_pct = *std::min_element(changes.begin(), changes.end());
  r.hi_pct = *std::max_element(changes.begin(), changes.end());
  r.ratios = int(changes.size());
  r.rounds = rounds;
  return r;
}

std::string resolution_line(const Resolution& r, const std::string& what) {
  return fmt::format("with this noise, {} resolves changes of +-{:.1f} % or more ({}{:.1f}-{:.1f} %; 95 % "
                     "confidence, 80 % power)",
                     what, r.change_pct,
                     r.ratios > 1 ? fmt::format("median of {} ratios, ", r.ratios) : std::string("one ratio, "),
                     r.lo_pct, r.hi_pct);
}

ResolutionDoc resolution_doc(const Resolution& r, const std::string& line) {
  ResolutionDoc d;
  d.change_pct = r.change_pct;
  d.min_pct = r.lo_pct;
  d.max_pct = r.hi_pct;
  d.ratios = r.ratios;
  d.rounds = r.rounds;
  d.basis = "the change a two-sided 5 % test finds with 80 % power, (t_0.975 + t_0.80) s / sqrt(rounds), s and the "
            "degrees of freedom projected from each judged ratio's interval; at least the 1 % noise threshold; the "
            "median over the ratios";
  d.line = line;
  return d;
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
