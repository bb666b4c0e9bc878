// reports/model/report/run_figures.cpp: every run-level figure, declared once (see run_figures.h).
#include "reports/model/report/run_figures.h"

#include <algorithm>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>

#include "reports/stats/stats.h"

namespace ladder {

namespace {
// A value of a typed section, or none when the section is absent.
template <class Section, class Get>
std::optional<double> of(const Section& section, Get get) {
  return section ? std::optional<double>(double(get(*section))) : std::nullopt;
}
constexpr double kGiB = 1.0 / double(1ll << 30);
}  // namespace

const std::vector<RunFigure>& run_figures() {
  using R = const RungReport&;
  static const std::vector<RunFigure> kFigures = {
      {"dt_ms_median", "step time: the median of a process's measured steps", [](R r) {
         return r.summary_value("dt_ms");
       }, Across::kMedian, "dt_ms", "", "{:.2f}", 1, nullptr, kRunTable | kCompareTable, nullptr},
      {"tokens_per_s_median", "tokens per second, all ranks: the median over a process's measured steps", [](R r) {
         return r.summary_value("tokens_per_s");
       }, Across::kMedian, "tok/s", "", "{:.0f}", 1, nullptr, kRunTable | kCompareTable,
       "Throughput per rung (median tokens/s, higher is better)"},
      // The datasheet peak where there is one for the device and precision,
      // else the matmul roofline measured on this device ('p').
      {"mfu_pct", "model FLOPs utilisation: against the datasheet peak, else ('p') the measured matmul roofline",
       [](R r) {
         if (!r.mfu) return std::optional<double>();
         return std::optional<double>(r.mfu->datasheet.mfu_pct.value_or(r.mfu->measured_roofline.mfu_pct));
       }, Across::kMedian, "MFU %", "", "{:.1f}", 1,
       [](R r) { return r.mfu && r.mfu->datasheet.mfu_pct ? "" : "p"; }, kRunTable | kCompareTable, nullptr},
      {"mfu_pct_datasheet", "MFU against the device's datasheet peak at the rung's precision (null: no entry)",
       [](R r) { return r.mfu ? r.mfu->datasheet.mfu_pct : std::nullopt; }, Across::kMedian, "", "",
       "{:.1f}", 1, nullptr, kSummaryOnly, nullptr},
      {"mfu_pct_measured_roofline", "MFU against the matmul roofline measured on this device",
       [](R r) { return of(r.mfu, [](const Mfu& m) { return m.measured_roofline.mfu_pct; }); }, Across::kMedian, "",
       "", "{:.1f}", 1, nullptr, kSummaryOnly, nullptr},
      // What MFU divides by a peak (bench/measure/harness/step_metrics.cpp: model_tflops).
      {"model_tflops_median", "model TFLOP/s achieved: the step's tokens x FLOPs per token over dt, the median step",
       [](R r) { return r.summary_value("model_tflops"); }, Across::kMedian, "TFLOP/s", "", "{:.3g}", 1,
       nullptr, kRunTable, nullptr},
      {"peak_bytes", "peak memory: CUDA's peak reserved bytes, or the process's peak RSS on a CPU",
       [](R r) { return of(r.memory, [](const Memory& m) { return m.measured.peak_bytes; }); }, Across::kMax, "peak",
       "GiB", "{:.2f}", kGiB, nullptr, kRunTable | kCompareTable, "Peak memory per rung (GiB, lower is better)"},
      // Beside the measured peak: what the analytic estimate expected
      // (bench/measure/report/memory.h; what zero1 and act-ckpt change, per rank).
      {"memory_estimate_bytes", "the analytic estimate of training memory per device (bench/measure/report/memory.h)",
       [](R r) { return of(r.memory, [](const Memory& m) { return m.estimate.total_bytes; }); }, Across::kMax, "est", "GiB",
       "{:.2f}", kGiB, nullptr, kRunTable, nullptr},
      // ddp: what the busiest rank sends per step under the ring model
      // (variants/ddp/process_group.h); zero1's gather adds (R-1)/R W.
      {"sent_bytes_per_step", "ddp: bytes a rank sends per step for its collectives (ring model), the busiest rank",
       [](R r) {
         if (!r.ddp || !*r.ddp) return std::optional<double>();
         const auto& across = (*r.ddp)->across_ranks_of_medians;
         const auto it = across.find("sent_bytes_ring");
         return it == across.end() ? std::nullopt : std::optional<double>(it->second.max);
       }, Across::kMax, "sent", "MB", "{:.2f}", 1e-6, nullptr, kRunTable, nullptr},
      {"ops_per_step", "CUDA kernels per step, or aten:: operators on a CPU (the op count's extra step)", [](R r) {
         if (!r.op_counts || !*r.op_counts) return std::optional<double>();
         const profiler::OpCounts& c = **r.op_counts;
         const auto ops = c.cuda_kernels_per_step > 0 ? c.cuda_kernels_per_step : c.cpu_ops_per_step;
         return std::optional<double>(double(ops));
       }, Across::kMedian, "ops/step", "", "{:.0f}", 1, nullptr, kRunTable, nullptr},
      {"data_pct_of_dt", "host time in the data phase as a share of the step",
       [](R r) { return of(r.timing, [](const Timing& t) { return t.data_pct_of_dt; }); }, Across::kMedian, "", "",
       "{:.1f}", 1, nullptr, kSummaryOnly, nullptr},
  };
  return kFigures;
}

const RunFigure& run_figure(const std::string& key) {
  for (const auto& f : run_figures())
    if (key == f.key) return f;
  throw std::logic_error("no run figure is declared as '" + key + "' (reports/model/report/run_figures.cpp)");
}

const char* const kFigureKeyPattern =
    "^[a-z][a-z0-9_]*_(ms|s|pct|bytes|per_s|per_step|tflops|x)(_(median|mean|min|max|datasheet|measured_roofline|of_dt))?$";

bool figure_key_has_unit(const std::string& key) {
  static const std::regex kUnit(kFigureKeyPattern);
  return std::regex_match(key, kUnit);
}

CellFigures cell_figures_of(const std::vector<const RungReport*>& reports) {
  CellFigures out;
  for (const RunFigure& f : run_figures()) {
    std::vector<double> values;
    std::vector<std::optional<double>>& listed = out.per_process[f.key];
    for (const RungReport* r : reports) {
      listed.push_back(f.of_report(*r));
      if (listed.back()) values.push_back(*listed.back());
    }
    if (values.size() != reports.size() || values.empty()) {
      out.values[f.key] = std::nullopt;  // a process without it: the figure is not known for the cell
    } else {
      out.values[f.key] = f.across == Across::kMax ? *std::max_element(values.begin(), values.end())
                                                   : summarize(values).median;
    }
    if (f.marker && !reports.empty()) out.markers[f.key] = f.marker(*reports.front());
  }
  return out;
}

}  // namespace ladder
