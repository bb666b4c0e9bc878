// bench/step_columns.cpp: see step_columns.h.
#include "bench/step_columns.h"

#include "reports/stats.h"

namespace ladder {

namespace {
template <class F>
std::vector<double> column(const std::vector<StepRecord>& steps, F f) {
  std::vector<double> out;
  out.reserve(steps.size());
  for (const auto& s : steps) out.push_back(f(s));
  return out;
}
}  // namespace

nlohmann::json steps_to_json(const std::vector<StepRecord>& steps, int world_size) {
  nlohmann::json j;
  std::vector<int64_t> idx;
  for (const auto& s : steps) idx.push_back(s.step);
  j["step"] = idx;
  j["dt_ms"] = column(steps, [](const StepRecord& s) { return s.dt_ms; });
  j["tokens_per_s"] = column(steps, [](const StepRecord& s) { return s.tokens_per_s; });
  j["tokens_per_s_per_device"] =
      column(steps, [&](const StepRecord& s) { return s.tokens_per_s / world_size; });
  j["loss"] = column(steps, [](const StepRecord& s) { return s.loss; });
  j["grad_norm"] = column(steps, [](const StepRecord& s) { return s.grad_norm; });
  j["lr"] = column(steps, [](const StepRecord& s) { return s.lr; });
  j["data_ms"] = column(steps, [](const StepRecord& s) { return s.data_ms; });
  if (!steps.empty() && steps.front().has_phases) {
    nlohmann::json phases;
    for (size_t p = 0; p < std::size(kPhases); ++p)
      phases[phase_name(kPhases[p])] =
          column(steps, [&](const StepRecord& s) { return s.phase_ms[p]; });
    j["phase_ms"] = phases;
  }
  if (!steps.empty() && steps.front().has_comm) {
    j["allreduce_ms"] = column(steps, [](const StepRecord& s) { return s.allreduce_ms; });
    j["allreduce_exposed_ms"] = column(steps, [](const StepRecord& s) { return s.allreduce_exposed_ms; });
    j["allreduce_overlap_pct"] = column(steps, [](const StepRecord& s) { return s.overlap_pct; });
    j["allreduce_pct_of_dt"] =
        column(steps, [](const StepRecord& s) { return 100.0 * s.allreduce_ms / s.dt_ms; });
    j["allreduce_bytes"] = column(steps, [](const StepRecord& s) { return double(s.allreduce_bytes); });
    j["allreduce_buckets"] = column(steps, [](const StepRecord& s) { return double(s.buckets); });
  }
  if (!steps.empty() && steps.front().has_memory) {
    auto bytes = [&](auto f) {
      std::vector<int64_t> out;
      for (const auto& s : steps) out.push_back(f(s.memory));
      return out;
    };
    j["peak_rss_bytes"] = bytes([](const StepMemory& m) { return m.peak_rss_bytes; });
    if (steps.front().memory.cuda) {
      j["peak_active_bytes"] = bytes([](const StepMemory& m) { return m.peak_active_bytes; });
      j["peak_reserved_bytes"] = bytes([](const StepMemory& m) { return m.peak_reserved_bytes; });
      j["peak_allocated_bytes"] = bytes([](const StepMemory& m) { return m.peak_allocated_bytes; });
      j["alloc_retries"] = bytes([](const StepMemory& m) { return m.alloc_retries; });
      j["ooms"] = bytes([](const StepMemory& m) { return m.ooms; });
    }
  }
  return j;
}

nlohmann::json summarize_steps(const std::vector<StepRecord>& steps, int world_size) {
  nlohmann::json cols = steps_to_json(steps, world_size);
  nlohmann::json j;
  for (const char* key : {"dt_ms", "tokens_per_s", "tokens_per_s_per_device", "loss", "grad_norm", "data_ms"})
    j[key] = summarize(cols[key].get<std::vector<double>>());
  for (const char* key : {"allreduce_ms", "allreduce_exposed_ms", "allreduce_overlap_pct", "allreduce_pct_of_dt"})
    if (cols.contains(key)) j[key] = summarize(cols[key].get<std::vector<double>>());
  if (cols.contains("phase_ms")) {
    for (auto& [name, values] : cols["phase_ms"].items())
      j["phase_ms"][name] = summarize(values.get<std::vector<double>>());
  }
  return j;
}

}  // namespace ladder
