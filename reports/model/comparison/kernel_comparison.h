// reports/model/comparison/kernel_comparison.h: `ladder compare A B --kernels`: which
// kernels (CUDA) or operators (CPU) changed between the inputs, family by
// family and band by band, each difference with its 95 % interval.
//
// The samples are per-process: each process's whole kernel table
// (op_breakdown.kernels, ms per step over its profiled steps) summed by
// (band, family) (reports/model/comparison/kernel_family.h), a family a process did not
// run counting 0 ms there. Per family and input: the mean ms and calls per
// step over the input's processes. Against the baseline:
//  - added / removed: no process of the baseline ran the family and the
//    input's did, or the reverse; moved: the same, but the other input ran
//    the family in another band (on a CPU an operator's band is its
//    context's: aten::empty under a GEMM or an optimizer), not flagged;
//  - otherwise B - A with Welch's interval of a difference of means
//    (reports/stats/inference.h) when each side has 2+ processes (the two
//    sides of one A/B run: the paired t interval over its rounds), and its
//    p-value, Holm-adjusted over the rung's families (and, apart, over its
//    bands); the verdict is the rungs' rule (reports/stats/verdict.h) on
//    B / A, with --kernel-threshold as its noise threshold, or 0.1 % of
//    the baseline's step where that is more (floor_ms): slower, faster,
//    within noise or unresolved; "cannot judge" with one process a side.
// Bands are the op breakdown's categories (categories_ms), compared the same
// way, so the band table's largest gap gets an interval. A report from
// before the whole table holds only each band's 8 largest names, cut at 160
// characters (top_by_category): it is read as such and its source says so.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "profiler/common/fields.h"
#include "reports/model/report/report_loader.h"

namespace ladder {

// One input's figures for a family (or a band).
struct KernelInputFigures {
  double ms = 0, calls = 0;                // per step, mean over the input's processes
  int processes = 0;                       // of them, those that ran it
  std::vector<double> ms_per_process;      // every process's, 0 where it did not run it
  std::vector<std::string> names;          // the whole names it matched (families; empty for a band)
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("ms", s.ms, Doc("ms per step, mean over the input's processes (0 where one did not run it)").min(0));
    v("calls", s.calls, Doc("calls per step, mean over the processes").min(0));
    v("processes", s.processes, Doc("the input's processes that ran it").min(0));
    v("ms_per_process", s.ms_per_process, Doc("each process's ms per step: the samples").min(0));
    v("names", s.names, "the whole kernel or operator names of the family in this input");
  }
};

// One input against the baseline on a family (or a band).
struct KernelDifference {
  std::string verdict;  // added, removed, moved, slower, faster, within noise, unresolved, cannot judge
  double diff_ms = 0;   // B - A, ms per step
  std::optional<double> lo_ms, hi_ms;  // its 95 % interval (2+ processes a side)
  std::optional<double> p_value, p_holm;
  bool flagged = false;  // added, removed, slower or faster
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("verdict", s.verdict,
      Doc("added, removed, moved (to or from another band), slower, faster, within noise, unresolved, or cannot "
          "judge (one process a side)")
          .one_of({"added", "removed", "moved", "slower", "faster", "within noise", "unresolved", "cannot judge"}));
    v("diff_ms", s.diff_ms, "this input's ms per step less the baseline's");
    v("lo_ms", s.lo_ms, "the difference's 95 % interval (Welch), or null");
    v("hi_ms", s.hi_ms, "the difference's 95 % interval (Welch), or null");
    v("p_value", s.p_value, "Welch's two-sided p of no difference, or null");
    v("p_holm", s.p_holm, "p Holm-adjusted over the rung's families (or bands), or null");
    v("flagged", s.flagged, "added, removed, slower or faster");
  }
};

struct KernelFamilyRow {
  std::string family, band;  // band: the op breakdown category; a band row's family is the band
  std::vector<KernelInputFigures> inputs;             // one per input
  std::vector<std::optional<KernelDifference>> vs_baseline;  // null for the baseline
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("family", s.family, "the normalised name (reports/model/comparison/kernel_family.h), or the band's key");
    v("band", s.band, "the op breakdown category it counts in");
    v("inputs", s.inputs, "per input, in argument order");
    v("vs_baseline", s.vs_baseline, "per input against the first; null for the first");
  }
};

// One rung's kernels across the inputs.
struct RungKernels {
  std::string rung, cell;
  std::vector<std::string> sources;  // per input: "kernels", "top_by_category" or "none"
  std::vector<KernelFamilyRow> families, bands;  // families: the largest |difference| first
  int families_flagged = 0, families_compared = 0;  // over every input against the baseline
  double floor_ms = 0;  // the smallest change called slower or faster: 0.1 % of the baseline's step
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("rung", s.rung);
    v("cell", s.cell);
    v("sources", s.sources,
      Doc("per input: kernels (the whole table), top_by_category (an older report: each band's 8 largest names, "
          "cut at 160 characters) or none (no valid breakdown)")
          .one_of({"kernels", "top_by_category", "none"}));
    v("families", s.families, "every family any input ran, the largest difference first");
    v("bands", s.bands, "the op breakdown's bands, compared the same way");
    v("families_flagged", s.families_flagged, Doc("families flagged against the baseline, over the inputs").min(0));
    v("families_compared", s.families_compared, Doc("families times inputs other than the baseline").min(0));
    v("floor_ms", s.floor_ms,
      Doc("the smallest change of a family or band called slower or faster, whatever its share: 0.1 % of the "
          "baseline's step (the sum of its bands)")
          .min(0));
  }
};

struct KernelComparison {
  double alpha = 0.05, threshold_pct = 5;
  std::string method = "welch";  // "paired" for the two sides of an A/B run
  std::vector<RungKernels> rungs;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("alpha", s.alpha, Doc("the significance level").above(0));
    v("threshold_pct", s.threshold_pct,
      Doc("--kernel-threshold: the smallest change of a family's ms per step called slower or faster").min(0));
    v("method", s.method,
      Doc("welch: the inputs' processes as independent samples; paired: the two sides of an A/B run, by round")
          .one_of({"welch", "paired"}));
    v("rungs", s.rungs, "every rung with a breakdown in the baseline and another input");
  }
};

// The kernels of `cells` across `runs` (the first is the baseline);
// `paired`: the runs are an A/B run's two sides, their processes paired by
// round (where a rung has as many on each side).
KernelComparison compare_kernels(const std::vector<LoadedRun>& runs, const std::vector<std::string>& cells,
                                 double alpha, double threshold_pct, bool paired = false);

}  // namespace ladder
