// reports/model/report/slow_rank.h: which rank of a ddp job the others wait for.
//
// Every rank records, per measured step, the time of its phases with the
// communication wait taken out (data, forward, backward less the exposed
// all-reduce, optimizer less ZeRO-1's gather) and that wait
// (bench/measure/measure.cpp, ddp.per_rank[].phases_ms). A straggler is a rank
// whose compute is longer than the others' in the same steps: the others
// finish their backward first and wait for its gradient buckets.
//
// The rule, judge_slow_rank: per step, the log of each rank's compute over
// the mean of the other ranks' in the same step. Its median over the steps
// is the rank's ratio, with a distribution-free 95 % interval (order
// statistics) and the one-sided sign test's p-value of "no slower"
// (reports/stats/inference.h median_interval), Holm-adjusted over the ranks, and judged by the rung
// ratios' rule (reports/stats/verdict.h judge_change) at kSlowRankAlpha and
// kSlowRankMinPct: the slowest rank is named only when it is slower by at
// least that much in most steps. Here the steps are the samples, which
// reports/stats otherwise never takes: pairing the ranks of one step removes
// what the step shares, and the median and the signs ignore a few disturbed
// steps, which on a host whose ranks share cores move one rank's step by a
// quarter (a mean and its t interval named a rank in quiet runs there). With
// fewer than 6 steps there is no interval, and no rank is named.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profiler/common/fields.h"

namespace ladder {

inline constexpr double kSlowRankAlpha = 0.05;
inline constexpr double kSlowRankMinPct = 5.0;

// One rank's measured steps: its compute phases, indexed like kPhases
// (variants/step/phases.h), and its communication wait, in ms per step.
struct RankSteps {
  int64_t rank = 0;
  std::array<std::vector<double>, 4> phase_ms;
  std::vector<double> wait_ms;
  double compute_ms(size_t step) const;  // the phases' sum
};

// The verdict in a ddp report (ddp.slow_rank) and a run summary's row.
struct SlowRank {
  bool resolved = false;   // whether `rank` is named slower
  int64_t rank = 0;        // the slowest rank by its ratio, named or not
  int64_t ranks = 0, steps = 0;
  double ratio = 1, lo = 0, hi = 0, p_value = 1;  // its compute over the others', 95 % interval, Holm-adjusted p
  double extra_ms = 0, extra_lo_ms = 0, extra_hi_ms = 0;  // (ratio - 1) x the others' median compute
  std::string phase;                            // where its extra time is largest
  std::map<std::string, double> phase_extra_ms;  // per compute phase: median over steps of its minus the others'
  double others_wait_ms = 0, rank_wait_ms = 0;   // median per step: the others' mean wait, its own
  std::string basis;  // what the phases measured: "cpu_time" or "device_time"
  std::string rule;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("resolved", s.resolved, "whether `rank` is resolved slower than the others (the rule below)");
    v("rank", s.rank, Doc("the rank whose compute per step is the largest against the others'").min(0));
    v("ranks", s.ranks, Doc().min(2));
    v("steps", s.steps, Doc("measured steps compared, every rank's").min(0));
    v("ratio", s.ratio, Doc("the rank's compute per step over the mean of the others' in the same step").min(0));
    v("lo", s.lo, Doc("its 95 % interval; 0 when it cannot be formed").min(0));
    v("hi", s.hi, Doc().min(0));
    v("p_value", s.p_value, "one-sided, of 'no slower than the others', Holm-adjusted over the ranks");
    v("extra_ms", s.extra_ms, "ms per step more than the others: (ratio - 1) x the others' median compute");
    v("extra_lo_ms", s.extra_lo_ms);
    v("extra_hi_ms", s.extra_hi_ms);
    v("phase", s.phase, Doc("the compute phase with the largest extra time").one_of({"data", "forward", "backward", "optimizer"}));
    v("phase_extra_ms", s.phase_extra_ms, "per compute phase, the median over steps of the rank's ms minus the others' mean");
    v("others_wait_ms", s.others_wait_ms, Doc("median per step of the other ranks' mean communication wait").min(0));
    v("rank_wait_ms", s.rank_wait_ms, Doc("median per step of this rank's communication wait").min(0));
    v("basis", s.basis,
      Doc("the phases compared: on a CPU the CPU time of each rank's process over its intra-op threads (its own "
          "work: where a host's ranks share its cores, wall time holds their contention for them); on CUDA the "
          "device's time (CUDA events)")
          .one_of({"cpu_time", "device_time"}));
    v("rule", s.rule);
  }
};

// The verdict over two or more ranks with at least two common steps; throws
// std::invalid_argument otherwise. Steps beyond the shortest rank's are not used.
SlowRank judge_slow_rank(const std::vector<RankSteps>& ranks);

// Whether two processes' verdicts agree: both name the same rank, or neither names one.
bool same_verdict(const SlowRank& a, const SlowRank& b);

// What the run table prints after "ranks:": "rank 2 slowest, +4.10 ms
// [3.20, 5.00] per step (backward); the others wait 3.90 ms in
// communication", or "no rank resolved slower (the slowest, rank 1: +0.20 ms
// [-0.10, 0.50] per step)".
std::string slow_rank_text(const SlowRank& s);

}  // namespace ladder
