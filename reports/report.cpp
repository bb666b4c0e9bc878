// reports/report.cpp: see report.h.
#include "reports/report.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "bench/stats.h"
#include "build_info.h"
#include "reports/atomic_file.h"

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

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, int(ms));
}

std::string new_run_id() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return fmt::format("{}-{}", buf, getpid());
}

nlohmann::json rung_report_header(const RunConfig& cfg, const std::string& run_id,
                                  const std::vector<std::string>& argv, const std::string& started_at) {
  return {{"schema_version", kSchemaVersion},
          {"kind", "ladder.rung_report"},
          {"run_id", run_id},
          {"rung", cfg.rung},
          {"started_at", started_at},
          {"suite", {{"name", "ladder"}, {"version", build_info::kVersion},
                     {"git_commit", build_info::kGitCommit}, {"argv", argv}}},
          {"config", cfg}};
}

std::string report_path(const std::string& run_dir, const std::string& rung) {
  return (std::filesystem::path(run_dir) / rung / "report.json").string();
}

void write_report(const std::string& path, const nlohmann::json& report) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  write_file_atomically(path, report.dump(2) + "\n");
}

}  // namespace ladder
