// reports/report_loader.cpp: see report_loader.h.
#include "reports/report_loader.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "bench/cli.h"
#include "reports/report.h"
#include "variants/config.h"

namespace ladder {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ConfigError(fmt::format("{}: cannot read the file", path));
  std::stringstream buf;
  buf << f.rdbuf();
  try {
    return json::parse(buf.str());
  } catch (const json::parse_error& e) {
    // The parser quotes the offending bytes; keep the message printable.
    std::string what = e.what();
    for (char& ch : what)
      if (static_cast<unsigned char>(ch) >= 0x80 || (ch < 0x20 && ch != '\n')) ch = '?';
    throw ConfigError(fmt::format("{}: not valid JSON (truncated, or not UTF-8?) at byte {}: {}", path,
                                  e.byte, what));
  }
}

namespace {

void check_version(const json& j, const std::string& path) {
  if (!j.is_object() || !j.contains("kind") || !j.contains("schema_version"))
    throw ConfigError(fmt::format("{}: not a ladder report (no 'kind' and 'schema_version' fields); "
                                  "expected a rung report, a summary.json or a run directory",
                                  path));
  if (!j["schema_version"].is_number_integer())
    throw ConfigError(fmt::format("{}: field 'schema_version' is {}, expected an integer", path,
                                  j["schema_version"].dump()));
  const int v = j["schema_version"].get<int>();
  if (v > kSchemaVersion)
    throw ConfigError(fmt::format("{}: schema_version {} is newer than this ladder reads ({}); "
                                  "compare with a newer build of ladder",
                                  path, v, kSchemaVersion));
  if (v < 1)
    throw ConfigError(fmt::format("{}: schema_version {} predates the first released format (1); "
                                  "re-run the benchmark to produce a current report",
                                  path, v));
}

// A report named by a summary row, or a placeholder when it is absent.
json load_row_report(const fs::path& dir, const json& row, const std::string& summary_path) {
  if (!row.contains("report")) return json{{"status", row.value("status", "missing")}};
  const fs::path p = dir / row["report"].get<std::string>();
  if (!fs::exists(p)) return json{{"status", "missing"}};
  json r = read_json_file(p.string());
  check_version(r, p.string());
  return r;
}

}  // namespace

const json* LoadedRun::find(const std::string& cell) const {
  for (size_t i = 0; i < cells.size(); ++i)
    if (cells[i] == cell) return &reports[i];
  return nullptr;
}

json LoadedRun::environment() const {
  for (const auto& r : reports)
    if (r.value("status", "") == "ok" && r.contains("environment")) return r["environment"];
  return json::object();
}

LoadedRun load_run(const std::string& path, const std::string& label) {
  LoadedRun run;
  run.label = label;
  run.path = path;
  fs::path file = path;
  if (fs::is_directory(file)) {
    if (fs::exists(file / "summary.json")) {
      file /= "summary.json";
    } else if (fs::exists(file / "report.json")) {
      file /= "report.json";
    } else {
      throw ConfigError(fmt::format("{}: not a run directory (no summary.json) nor a rung directory "
                                    "(no report.json)", path));
    }
  } else if (!fs::exists(file)) {
    throw ConfigError(fmt::format("{}: no such file or directory", path));
  }
  const json j = read_json_file(file.string());
  check_version(j, file.string());
  const std::string kind = j["kind"].get<std::string>();
  if (kind == "ladder.rung_report") {
    run.run_id = j.value("run_id", "");
    run.cells = {j.value("rung", "?")};
    run.reports = {j};
  } else if (kind == "ladder.run_summary") {
    run.run_id = j.value("run_id", "");
    for (const auto& row : j.at("rows")) {
      run.cells.push_back(row.at("cell").get<std::string>());
      run.reports.push_back(load_row_report(file.parent_path(), row, file.string()));
    }
  } else {
    throw ConfigError(fmt::format("{}: kind '{}' is not a report; expected ladder.rung_report or "
                                  "ladder.run_summary",
                                  file.string(), kind));
  }
  return run;
}

LoadedRun load_run_group(const std::string& paths, const std::string& label) {
  const std::vector<std::string> parts = split_csv(paths);
  if (parts.empty()) throw ConfigError(fmt::format("input '{}' names no run", paths));
  if (parts.size() == 1) return load_run(parts[0], label);
  LoadedRun group;
  for (const auto& p : parts) group.repeats.push_back(load_run(p, label));
  const LoadedRun& first = group.repeats.front();
  group.label = label;
  group.path = paths;
  group.run_id = first.run_id + fmt::format(" (+{} repeats)", parts.size() - 1);
  group.cells = first.cells;
  group.reports = first.reports;
  return group;
}

}  // namespace ladder
