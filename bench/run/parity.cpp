// bench/run/parity.cpp: see parity.h.
#include "bench/run/parity.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "bench/run/run_dir.h"
#include "variants/config/rungs.h"

namespace ladder {

using nlohmann::json;

namespace {

// A column of the report's warm-up and measured steps, in step order.
std::vector<double> series(const RungReport& report, const char* column) {
  std::vector<double> out;
  for (const auto* steps : {&report.warmup_steps, &report.steps})
    if (const std::vector<double>* values = *steps ? (*steps)->of(column) : nullptr)
      out.insert(out.end(), values->begin(), values->end());  // a null (NaN) stays NaN
  return out;
}

// Round 1's report of a cell; empty when it has none.
std::optional<RungReport> round1_report(const Cell& cell, const RunnerOptions& o, const std::string& side) {
  return read_run_report(cell_report(o, cell, 1, side));
}

// Largest relative difference over the first k entries (inf if any is NaN).
double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b, size_t k) {
  double worst = 0;
  for (size_t i = 0; i < k; ++i) {
    const double rel = std::fabs(a[i] - b[i]) / std::max(std::fabs(b[i]), 1e-12);
    worst = std::isnan(rel) ? INFINITY : std::max(worst, rel);
  }
  return worst;
}

}  // namespace

Parity check_parity(const Cell& cell, const std::map<std::string, const Cell*>& by_id, const RunnerOptions& o,
                    const std::string& side) {
  const auto subject =
      cell.parity_ref.empty() ? std::nullopt : round1_report(*by_id.at(cell.parity_subject), o, side);
  // The class of the precision the subject really ran in (a switch that was
  // not effective on this device does not loosen the tolerance).
  const Switches numerics = subject && subject->switches ? numerics_in_effect(cell.cfg.sw, *subject->switches)
                                                         : cell.cfg.sw;
  Parity p;
  p.parity_class = parity_class(numerics);
  p.rtol = parity_rtol(numerics);
  p.reference = cell.parity_ref;
  p.subject = cell.parity_subject;
  if (cell.parity_ref.empty()) {
    p.status = "baseline";
    return p;
  }
  // A reference that was not to run here (it does not fit --memory-budget,
  // or cannot run on this device): not checked, and said why.
  for (const std::string& id : {cell.parity_ref, cell.parity_subject})
    if (const Cell& c = *by_id.at(id); !c.runnable) {
      p.status = "not_checked";
      p.reason = fmt::format("'{}' was not run: {}", id, c.not_runnable_reason);
      return p;
    }
  const auto ref = round1_report(*by_id.at(cell.parity_ref), o, side);
  if (!subject || !ref || subject->status != "ok" || ref->status != "ok") {
    p.status = "unavailable";
    p.reason = fmt::format("needs complete reports of '{}' and '{}'", cell.parity_subject, cell.parity_ref);
    return p;
  }
  const auto loss_a = series(*subject, "loss"), loss_b = series(*ref, "loss");
  const auto norm_a = series(*subject, "grad_norm"), norm_b = series(*ref, "grad_norm");
  const size_t k = std::min<size_t>({size_t(o.parity_steps), loss_a.size(), loss_b.size()});
  const double loss_diff = max_rel_diff(loss_a, loss_b, k);
  const double norm_diff = max_rel_diff(norm_a, norm_b, k);
  auto finite_or_null = [](double v) { return std::isfinite(v) ? std::optional<double>(v) : std::nullopt; };
  p.steps_compared = int64_t(k);
  p.max_rel_diff = finite_or_null(loss_diff);
  p.grad_norm_max_rel_diff = finite_or_null(norm_diff);
  p.subject_losses = std::vector<double>(loss_a.begin(), loss_a.begin() + long(k));
  p.reference_losses = std::vector<double>(loss_b.begin(), loss_b.begin() + long(k));
  const bool loss_ok = loss_diff <= p.rtol, norm_ok = norm_diff <= p.rtol;  // false for inf (a NaN)
  // The quantity that decides the verdict: the one that failed, or the
  // closer to its tolerance; named with its value in the table and gpu-smoke.
  const bool norm_decides = norm_ok == loss_ok ? !(norm_diff <= loss_diff) : !norm_ok;
  const char* decides = norm_decides ? "grad_norm" : "loss";
  const double worst = norm_decides ? norm_diff : loss_diff, other = norm_decides ? loss_diff : norm_diff;
  p.worst_quantity = std::string(decides);
  p.worst_rel_diff = finite_or_null(worst);
  p.status = loss_ok && norm_ok ? "pass" : "fail";
  p.failed_quantity = loss_ok && norm_ok ? std::nullopt : std::optional<std::string>(decides);
  p.reason = fmt::format("{} max rel diff {:.2e} {} rtol {:.0e} ({} {:.2e}) over {} steps",
                         norm_decides ? "grad norm" : "loss", worst, worst <= p.rtol ? "<=" : ">", p.rtol,
                         norm_decides ? "loss" : "grad norm", other, k);
  return p;
}

}  // namespace ladder
