// reports/model/comparison/kernel_comparison.cpp: see kernel_comparison.h.
#include "reports/model/comparison/kernel_comparison.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "profiler/trace/breakdown_section.h"
#include "reports/model/comparison/kernel_family.h"
#include "reports/model/run/peer_cells.h"
#include "reports/stats/inference.h"
#include "reports/stats/verdict.h"

namespace ladder {

namespace {

using Key = std::pair<std::string, std::string>;  // (band, family)

// A change of a family or band smaller than this share of the step is
// within noise however consistent: the profiler's own cost per operator
// call (tens of ns; the operator slowdown hook's callback adds as much) adds
// up to a real, reproducible, meaningless microsecond in a family of
// thousands of tiny calls.
constexpr double kFloorPctOfStep = 0.1;

struct FamilyTotal {
  double ms = 0, calls = 0;
  std::set<std::string> names;
};

// One process's kernel table by (band, family), and its bands.
struct ProcessKernels {
  std::map<Key, FamilyTotal> families;
  std::map<std::string, double> bands;
};

// A process's table, from its report's breakdown when valid: the whole
// table, or an older report's largest names per band.
std::optional<ProcessKernels> process_kernels(const RungReport& report, std::string& source) {
  source = "none";
  if (report.status != "ok" || !report.op_breakdown || !*report.op_breakdown) return std::nullopt;
  const profiler::OpBreakdownSection& b = **report.op_breakdown;
  if (!b.valid.value_or(false) || !b.categories_ms) return std::nullopt;
  ProcessKernels p;
  auto add = [&](const std::string& name, const std::string& band, double ms, double calls) {
    FamilyTotal& t = p.families[{band, kernel_family(name)}];
    t.ms += ms;
    t.calls += calls;
    t.names.insert(name);
  };
  if (b.kernels) {
    source = "kernels";
    for (const auto& k : *b.kernels) add(k.name, k.band, k.ms, k.calls);
  } else if (b.top_by_category) {
    source = "top_by_category";
    for (size_t c = 0; c < profiler::kCategoryCount; ++c)
      for (const auto& k : b.top_by_category->values[c]) add(k.name, profiler::category_key(profiler::Category(c)),
                                                               k.ms, k.calls);
  } else {
    return std::nullopt;
  }
  for (size_t c = 0; c < profiler::kCategoryCount; ++c)
    p.bands[profiler::category_key(profiler::Category(c))] = b.categories_ms->values[c];
  return p;
}

// An input's processes that have a table, and the input's source (the
// poorest of its processes').
struct InputKernels {
  std::vector<ProcessKernels> processes;
  std::string source = "none";
};

InputKernels input_kernels(const LoadedRun& run, const std::string& cell) {
  InputKernels in;
  for (const LoadedRun* m : processes_of(run)) {
    const RungReport* r = m->find(cell);
    if (!r) continue;
    std::string source;
    auto p = process_kernels(*r, source);
    if (!p) continue;
    if (in.source != "top_by_category") in.source = source;
    in.processes.push_back(std::move(*p));
  }
  return in;
}

// An input's figures for one key, from `value` of each process (nullopt where it did not run it).
template <class Of>
KernelInputFigures figures_of(const InputKernels& in, Of value) {
  KernelInputFigures f;
  for (const auto& p : in.processes) {
    const std::optional<FamilyTotal> t = value(p);
    f.ms_per_process.push_back(t ? t->ms : 0.0);
    if (!t) continue;
    ++f.processes;
    f.calls += t->calls;
    f.names.insert(f.names.end(), t->names.begin(), t->names.end());
  }
  const double n = double(std::max<size_t>(1, in.processes.size()));
  for (double v : f.ms_per_process) f.ms += v / n;
  f.calls /= n;
  std::sort(f.names.begin(), f.names.end());
  f.names.erase(std::unique(f.names.begin(), f.names.end()), f.names.end());
  return f;
}

// B against A before the adjustment: added, removed, cannot judge, or tested (p set).
KernelDifference difference(const KernelInputFigures& a, const KernelInputFigures& b, bool paired) {
  KernelDifference d;
  d.diff_ms = b.ms - a.ms;
  if (a.processes == 0 && b.processes > 0) d.verdict = "added";
  else if (b.processes == 0 && a.processes > 0) d.verdict = "removed";
  if (!d.verdict.empty()) {
    d.flagged = true;
    return d;
  }
  const DifferenceInterval i = paired && a.ms_per_process.size() == b.ms_per_process.size()
                                   ? difference_of_paired(a.ms_per_process, b.ms_per_process)
                                   : difference_of_independent(a.ms_per_process, b.ms_per_process);
  if (!i.has_interval) {
    d.verdict = "cannot judge";
    return d;
  }
  d.lo_ms = i.lo;
  d.hi_ms = i.hi;
  d.p_value = i.p_value;
  return d;
}

// The verdict of a tested difference, by the rungs' rule on B / A, its
// threshold the larger of `threshold_pct` of the family and `floor_ms`.
void decide(KernelDifference& d, double base_ms, double alpha, double threshold_pct, double floor_ms) {
  if (base_ms > 0) threshold_pct = std::max(threshold_pct, 100.0 * floor_ms / base_ms);
  RatioInterval r;
  if (base_ms > 0) {
    r.ratio = 1 + d.diff_ms / base_ms;
    r.lo = std::max(1e-12, 1 + *d.lo_ms / base_ms);
    r.hi = std::max(1e-12, 1 + *d.hi_ms / base_ms);
  }
  const Change c = base_ms > 0 ? judge_change(r, *d.p_holm, alpha, threshold_pct) : Change::kUnresolved;
  d.verdict = change_name(c);
  d.flagged = c == Change::kFaster || c == Change::kSlower;
}

// The families each input ran, in any band.
std::vector<std::set<std::string>> families_run(const std::vector<KernelFamilyRow>& rows, size_t inputs) {
  std::vector<std::set<std::string>> run(inputs);
  for (const auto& row : rows)
    for (size_t i = 0; i < inputs; ++i)
      if (row.inputs[i].processes > 0) run[i].insert(row.family);
  return run;
}

// Every row against the baseline, Holm-adjusted per input over the rows. A
// family added to one band or removed from it that the other input ran in
// another band moved: the same operator counted elsewhere (on a CPU, an
// operator's band is its context's), not a new or a lost one.
void judge_rows(std::vector<KernelFamilyRow>& rows, size_t inputs, double alpha, double threshold_pct, double floor_ms,
                bool paired, bool families) {
  const auto run = families_run(rows, inputs);
  for (auto& row : rows) {
    row.vs_baseline.assign(inputs, std::nullopt);
    for (size_t i = 1; i < inputs; ++i) {
      if (row.inputs[0].ms_per_process.empty() || row.inputs[i].ms_per_process.empty() ||
          row.inputs[0].processes + row.inputs[i].processes == 0)
        continue;
      KernelDifference d = difference(row.inputs[0], row.inputs[i], paired);
      const size_t other = d.verdict == "added" ? 0 : i;
      if (families && (d.verdict == "added" || d.verdict == "removed") && run[other].count(row.family)) {
        d.verdict = "moved";
        d.flagged = false;
      }
      row.vs_baseline[i] = d;
    }
  }
  for (size_t i = 1; i < inputs; ++i) {
    std::vector<KernelDifference*> tested;
    std::vector<double> p;
    for (auto& row : rows)
      if (row.vs_baseline[i] && row.vs_baseline[i]->p_value) {
        tested.push_back(&*row.vs_baseline[i]);
        p.push_back(*row.vs_baseline[i]->p_value);
      }
    const std::vector<double> adjusted = holm_adjusted(p);
    for (size_t k = 0; k < tested.size(); ++k) tested[k]->p_holm = adjusted[k];
    for (auto& row : rows)
      if (row.vs_baseline[i] && row.vs_baseline[i]->p_holm)
        decide(*row.vs_baseline[i], row.inputs[0].ms, alpha, threshold_pct, floor_ms);
  }
}

double largest_difference(const KernelFamilyRow& row) {
  double m = 0;
  for (const auto& d : row.vs_baseline)
    if (d) m = std::max(m, std::fabs(d->diff_ms));
  return m;
}

RungKernels rung_kernels(const std::vector<InputKernels>& inputs, const std::string& cell, double alpha,
                         double threshold_pct, bool paired) {
  RungKernels out;
  out.rung = peer_display_name(cell);
  out.cell = cell;
  std::set<Key> keys;
  std::set<std::string> bands;
  for (const auto& in : inputs) {
    out.sources.push_back(in.source);
    for (const auto& p : in.processes) {
      for (const auto& [key, t] : p.families) keys.insert(key);
      for (const auto& [band, ms] : p.bands) bands.insert(band);
    }
  }
  for (const auto& key : keys) {
    KernelFamilyRow row{key.second, key.first, {}, {}};
    for (const auto& in : inputs)
      row.inputs.push_back(figures_of(in, [&](const ProcessKernels& p) -> std::optional<FamilyTotal> {
        const auto it = p.families.find(key);
        return it == p.families.end() ? std::nullopt : std::optional<FamilyTotal>(it->second);
      }));
    out.families.push_back(std::move(row));
  }
  for (const auto& band : bands) {
    KernelFamilyRow row{band, band, {}, {}};
    for (const auto& in : inputs)
      row.inputs.push_back(figures_of(in, [&](const ProcessKernels& p) -> std::optional<FamilyTotal> {
        const auto it = p.bands.find(band);
        // A band a process measured at 0 ms is one it did not run.
        return it == p.bands.end() || !(it->second > 0) ? std::nullopt
                                                        : std::optional<FamilyTotal>(FamilyTotal{it->second, 0, {}});
      }));
    // A band no input ran (communication in a single process) is no row.
    if (std::any_of(row.inputs.begin(), row.inputs.end(), [](const auto& f) { return f.processes > 0; }))
      out.bands.push_back(std::move(row));
  }
  // The smallest change that matters to the step: kFloorPctOfStep of the
  // baseline's step (its bands' sum).
  double step_ms = 0;
  for (const auto& band : out.bands) step_ms += band.inputs[0].ms;
  out.floor_ms = kFloorPctOfStep / 100.0 * step_ms;
  judge_rows(out.families, inputs.size(), alpha, threshold_pct, out.floor_ms, paired, /*families=*/true);
  judge_rows(out.bands, inputs.size(), alpha, threshold_pct, out.floor_ms, paired, /*families=*/false);
  std::stable_sort(out.families.begin(), out.families.end(), [](const auto& a, const auto& b) {
    const double da = largest_difference(a), db = largest_difference(b);
    return da != db ? da > db : a.inputs[0].ms > b.inputs[0].ms;
  });
  for (const auto& row : out.families)
    for (size_t i = 1; i < row.vs_baseline.size(); ++i) {
      if (!row.vs_baseline[i]) continue;
      ++out.families_compared;
      out.families_flagged += row.vs_baseline[i]->flagged ? 1 : 0;
    }
  return out;
}

}  // namespace

KernelComparison compare_kernels(const std::vector<LoadedRun>& runs, const std::vector<std::string>& cells,
                                 double alpha, double threshold_pct, bool paired) {
  KernelComparison out;
  out.alpha = alpha;
  out.threshold_pct = threshold_pct;
  out.method = paired ? "paired" : "welch";
  for (const auto& cell : cells) {
    std::vector<InputKernels> inputs;
    for (const auto& run : runs) inputs.push_back(input_kernels(run, cell));
    const bool compared = !inputs[0].processes.empty() &&
                          std::any_of(inputs.begin() + 1, inputs.end(),
                                      [](const InputKernels& in) { return !in.processes.empty(); });
    if (compared) out.rungs.push_back(rung_kernels(inputs, cell, alpha, threshold_pct, paired));
  }
  return out;
}

}  // namespace ladder
