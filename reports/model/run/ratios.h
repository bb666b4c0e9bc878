// reports/model/run/ratios.h: a ratio between a run's cells is one declaration.
//
// A ratio kind says, for a row of a run's summary (reports/model/run/run_model.h),
// which cell its tokens/s is divided by or divides (`against`), how the two
// cells' per-process values are paired (`pairing`), whether it tests "no
// change" (a p-value), where it is shown, and which runs' --repeat auto
// narrows it. Its interval follows from the pairing:
//   kBlocks: rounds as blocks over every ok cell of the row's shape
//            (reports/stats/block_design.h), residual degrees of freedom;
//   kRounds: the two cells' processes of one round side by side (the two
//            sides of an A/B run ran back to back), t on the log ratios.
// ratios.cpp holds the list and computes every kind; the runner records them
// in summary.json (reports/model/run/run_model.h writes them), the run table shows the
// kinds marked for it after tokens/s, the ablation and A/B tables and the
// peers' line read theirs by key, --repeat auto (bench/run/rounds.cpp) narrows
// the judged ones, and compare's per-input speedups are the fp32 kind. A new
// kind is one entry in ratios.cpp, with its test.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "reports/stats/block_design.h"
#include "reports/model/run/run_model.h"

namespace ladder {

// The noise threshold of a run's ratios, as compare's default: an interval
// that holds 1 and reaches past it is unresolved ('?'; the x fp32 legend says +-1 %).
inline constexpr double kRatioNoisePct = 1.0;

enum class Pairing { kBlocks, kRounds };

// How summary.json holds a kind: `<key>`, `<key>_interval`, `<key>_against`
// (and `<key>_p` for a kind that tests), or a peer's ladder_vs_peer object.
enum class RatioLayout { kFlat, kPeerObject };

// Where a ratio is shown, beyond summary.json: a bit each.
enum RatioShown : unsigned {
  kRatioSummaryOnly = 0,
  kRatioRunTable = 1u << 0,  // a column of the run table, after tokens/s
  kRatioOnlyWhereAny = 1u << 1,  // with kRatioRunTable: only in a run where some row has a value
};

// What a kind says of one row.
struct RatioAgainst {
  bool applies = false;   // the row has this ratio (its keys are written, null without a reference)
  std::string cell;       // the full cell id it is against; "": no reference in this run
  bool row_over_it = true;  // the row's tokens/s over the other's; false: the other's over the row's
};

// The run a ratio is judged in, for --repeat auto.
struct RunKind {
  bool ablation = false;  // --mode ablation
  bool ab = false;        // --ab: two sides
};

struct RatioKind {
  const char* key;      // summary row key: "speedup_vs_fp32"
  const char* label;    // column header: "x fp32"
  const char* divides;  // one line for the docs: what over what
  Pairing pairing;
  bool tests;           // records a p-value of "the ratio is 1" (`<key>_p`)
  RatioLayout layout;
  unsigned shown;       // RatioShown bits
  const char* legend;   // the run table's line on it, where shown ("": none)
  RatioAgainst (*against)(const std::vector<SummaryRow>& rows, size_t row);
  // Whether --repeat auto narrows this ratio of `row` in such a run.
  bool (*judged)(const RunKind& run, const SummaryRow& row);
};

// In the run table's column order.
const std::vector<RatioKind>& ratio_kinds();
const RatioKind& ratio_kind(const std::string& key);  // throws std::logic_error for an undeclared key

// The pairs of a by-round ratio: a's and b's values of the rounds both have
// (positive, finite), in b's order.
struct RoundPairs {
  std::vector<double> a, b;
  std::vector<int> rounds;
};
RoundPairs paired_by_round(const ProcessSamples& a, const ProcessSamples& b);

// Every ok row's per-process tokens/s of one shape (SummaryRow::shape), by
// round: the block design the kBlocks ratios come from.
std::map<std::string, BlockDesign> designs_by_shape(const std::vector<SummaryRow>& rows);

// The degrees of freedom behind a row's interval of `kind`: for a kRounds
// ratio its rounds less one; for kBlocks the residual degrees of freedom of
// the shape's block design. 0 without an interval.
double ratio_df(const std::vector<SummaryRow>& rows, const SummaryRow& row, const RatioKind& kind);

// Sets every kind's ratio on every row it applies to, and each row's
// disturbed processes (the test of cells of its shape's block design:
// left out of every ratio, kBlocks and kRounds alike); `only_missing`: only
// the ratios the row has none of yet (a summary written before the kind, or
// before it recorded its p-value), and the disturbed processes as recorded.
void compute_ratios(std::vector<SummaryRow>& rows, bool only_missing = false);
// One kind's ratio on every row it applies to, and the rows' disturbed
// processes (compare's per-input speedups).
void compute_ratio(const RatioKind& kind, std::vector<SummaryRow>& rows);

}  // namespace ladder
