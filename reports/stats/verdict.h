// reports/stats/verdict.h: the one rule that says what a measured change of
// step time is: faster, slower, within noise or unresolved. `ladder
// compare`'s verdicts (reports/model/comparison/comparison.cpp) and the A/B table of
// `ladder run --ab` (reports/render/documents/run_document.cpp) both take it.
#pragma once

#include "reports/stats/inference.h"

namespace ladder {

enum class Change { kFaster, kSlower, kWithinNoise, kUnresolved };

// "faster", "slower", "within noise", "unresolved".
const char* change_name(Change c);

// `time`: a ratio of step times, new over base (below 1 is faster), with its
// interval; `p`: the p-value of "no change", adjusted over its family of
// tests (Holm, inference.h). Faster or slower when p < alpha, the change is
// at least `noise_pct` % and the interval excludes no change; within noise
// when the interval lies within the threshold, or when the change is
// significant but smaller than it; otherwise unresolved: the interval holds
// both no change and a change past the threshold, or the change is not
// significant after the adjustment (more processes would tell).
Change judge_change(const RatioInterval& time, double p, double alpha, double noise_pct);

// A ratio of rates (tokens/s, new over base) as the ratio of step times it
// is the inverse of: 1/ratio, with the interval [1/hi, 1/lo].
RatioInterval time_ratio_of_rate(const RatioInterval& rate);

}  // namespace ladder
