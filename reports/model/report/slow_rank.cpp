// reports/model/report/slow_rank.cpp: see slow_rank.h.
#include "reports/model/report/slow_rank.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "reports/stats/inference.h"
#include "reports/stats/stats.h"
#include "reports/stats/verdict.h"
#include "variants/step/phases.h"

namespace ladder {

namespace {

// Per step, the mean over the ranks other than `k` of f(rank, step).
template <class F>
std::vector<double> others_mean(const std::vector<RankSteps>& ranks, size_t k, size_t steps, F f) {
  std::vector<double> out(steps, 0.0);
  for (size_t j = 0; j < ranks.size(); ++j)
    if (j != k)
      for (size_t s = 0; s < steps; ++s) out[s] += f(ranks[j], s) / double(ranks.size() - 1);
  return out;
}

std::vector<double> compute_of(const RankSteps& r, size_t steps) {
  std::vector<double> out;
  for (size_t s = 0; s < steps; ++s) out.push_back(std::max(r.compute_ms(s), 1e-6));  // logs of positive values
  return out;
}

// Where rank k's extra time goes: per compute phase, the median over steps
// of its ms minus the others' mean.
void attribute_phases(const std::vector<RankSteps>& ranks, size_t k, size_t steps, SlowRank& out) {
  double largest = -INFINITY;
  for (size_t p = 0; p < std::size(kPhases); ++p) {
    const auto others = others_mean(ranks, k, steps, [p](const RankSteps& r, size_t s) { return r.phase_ms[p][s]; });
    std::vector<double> diff;
    for (size_t s = 0; s < steps; ++s) diff.push_back(ranks[k].phase_ms[p][s] - others[s]);
    const double d = median(diff);
    out.phase_extra_ms[phase_name(kPhases[p])] = d;
    if (d > largest) {
      largest = d;
      out.phase = phase_name(kPhases[p]);
    }
  }
}

}  // namespace

double RankSteps::compute_ms(size_t step) const {
  double sum = 0;
  for (const auto& p : phase_ms) sum += p.at(step);
  return sum;
}

SlowRank judge_slow_rank(const std::vector<RankSteps>& ranks) {
  if (ranks.size() < 2) throw std::invalid_argument("judge_slow_rank: needs two or more ranks");
  size_t steps = SIZE_MAX;
  for (const auto& r : ranks) {
    steps = std::min(steps, r.wait_ms.size());
    for (const auto& p : r.phase_ms) steps = std::min(steps, p.size());
  }
  if (steps < 2) throw std::invalid_argument("judge_slow_rank: needs two or more steps of every rank");
  std::vector<RatioInterval> ratio;
  std::vector<double> p;
  for (size_t k = 0; k < ranks.size(); ++k) {
    const auto others =
        others_mean(ranks, k, steps, [](const RankSteps& r, size_t s) { return std::max(r.compute_ms(s), 1e-6); });
    const auto mine = compute_of(ranks[k], steps);
    std::vector<double> log_ratio;
    for (size_t s = 0; s < steps; ++s) log_ratio.push_back(std::log(mine[s] / others[s]));
    const MedianInterval m = median_interval(log_ratio);
    RatioInterval r;
    r.ratio = std::exp(m.median);
    if (m.has_interval) {
      r.lo = std::exp(m.lo);
      r.hi = std::exp(m.hi);
    }
    r.p_value = m.p_above;  // one-sided: the question is whether this rank is slower
    r.method = "median_sign";
    ratio.push_back(r);
    p.push_back(m.p_above);
  }
  const std::vector<double> p_holm = holm_adjusted(p);
  const size_t k = size_t(std::max_element(ratio.begin(), ratio.end(),
                                           [](const auto& a, const auto& b) { return a.ratio < b.ratio; }) -
                          ratio.begin());
  SlowRank out;
  out.rank = ranks[k].rank;
  out.ranks = int64_t(ranks.size());
  out.steps = int64_t(steps);
  out.ratio = ratio[k].ratio;
  out.lo = ratio[k].lo;
  out.hi = ratio[k].hi;
  out.p_value = p_holm[k];
  out.resolved = judge_change(ratio[k], p_holm[k], kSlowRankAlpha, kSlowRankMinPct) == Change::kSlower;
  const double base =
      median(others_mean(ranks, k, steps, [](const RankSteps& r, size_t s) { return r.compute_ms(s); }));
  out.extra_ms = (out.ratio - 1) * base;
  if (ratio[k].has_interval()) {
    out.extra_lo_ms = (out.lo - 1) * base;
    out.extra_hi_ms = (out.hi - 1) * base;
  }
  attribute_phases(ranks, k, steps, out);
  out.others_wait_ms = median(others_mean(ranks, k, steps, [](const RankSteps& r, size_t s) { return r.wait_ms[s]; }));
  out.rank_wait_ms = median(std::vector<double>(ranks[k].wait_ms.begin(), ranks[k].wait_ms.begin() + long(steps)));
  out.rule = fmt::format(
      "each rank's compute per step (its phases less its communication wait) over the mean of the other ranks' in "
      "the same step, on the log scale, the steps its samples: their median, its distribution-free 95 % interval "
      "(order statistics) and the one-sided sign test's p, Holm-adjusted over the {} ranks; slower when p < {} and the ratio "
      "is {} % or more above 1 with its interval above 1",
      ranks.size(), kSlowRankAlpha, kSlowRankMinPct);
  return out;
}

bool same_verdict(const SlowRank& a, const SlowRank& b) {
  return a.resolved == b.resolved && (!a.resolved || a.rank == b.rank);
}

std::string slow_rank_text(const SlowRank& s) {
  const std::string extra =
      s.lo > 0
          ? fmt::format("{:+.2f} ms [{:.2f}, {:.2f}] per step", s.extra_ms, s.extra_lo_ms, s.extra_hi_ms)
          : fmt::format("{:+.2f} ms per step", s.extra_ms);
  if (s.resolved)
    return fmt::format("rank {} slowest, {} ({}); the others wait {:.2f} ms in communication", s.rank, extra,
                       s.phase, s.others_wait_ms);
  const std::string few =
      s.lo > 0 ? std::string() : fmt::format("; {} steps: too few for an interval, 6 or more", s.steps);
  return fmt::format("no rank resolved slower (the slowest, rank {}: {}{})", s.rank, extra, few);
}

}  // namespace ladder
