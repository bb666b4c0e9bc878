// reports/model/report/report.cpp: see report.h.
#include "reports/model/report/report.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "build_info.h"
#include "profiler/common/atomic_file.h"

namespace ladder {

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

RungReport rung_report_header(const RunConfig& cfg, const std::string& run_id, const std::vector<std::string>& argv,
                              const std::string& started_at) {
  RungReport r;
  r.schema_version = kSchemaVersion;
  r.kind = "ladder.rung_report";
  r.run_id = run_id;
  r.rung = cfg.rung;
  r.started_at = started_at;
  r.suite = SuiteSection{"ladder", build_info::kVersion, build_info::kGitCommit, argv};
  r.config = cfg;
  return r;
}

std::string report_path(const std::string& run_dir, const std::string& rung) {
  return (std::filesystem::path(run_dir) / rung / "report.json").string();
}

void write_report(const std::string& path, const nlohmann::json& report) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  write_file_atomically(path, report.dump(2) + "\n");
}

}  // namespace ladder
