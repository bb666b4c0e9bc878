// bench/run_dir.cpp: see run_dir.h.
#include "bench/run_dir.h"

#include <fstream>

#include <fmt/format.h>

#include "profiler/common/atomic_file.h"
#include "reports/report.h"

namespace ladder {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
// Repeat 1 of a cell (every run has it) writes <cell>/report.json; repeat k
// of --repeat N writes <cell>/repeat<k>/report.json.
std::string repeat_subdir(int repeat) { return repeat <= 1 ? "" : fmt::format("repeat{}", repeat); }
}  // namespace

std::optional<json> read_json(const fs::path& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  try {
    return json::parse(f);
  } catch (const json::parse_error&) {
    return std::nullopt;
  }
}

fs::path cell_dir(const RunnerOptions& o, const Cell& c) { return fs::path(o.run_dir) / c.id; }
fs::path cell_report(const RunnerOptions& o, const Cell& c, int repeat) {
  return cell_dir(o, c) / repeat_subdir(repeat) / "report.json";
}
std::string job_name(const Cell& c, int repeat) { return repeat <= 1 ? c.id : c.id + "/" + repeat_subdir(repeat); }
std::string relative_report(const Cell& c, int repeat) {
  return (fs::path(c.id) / repeat_subdir(repeat) / "report.json").string();
}

bool report_complete(const RunnerOptions& o, const Cell& c, int repeat) {
  auto r = read_json(cell_report(o, c, repeat));
  return r && r->value("status", "") == "ok";
}

void write_matrix_json(const std::vector<Cell>& cells, const RunnerOptions& o) {
  json j = {{"schema_version", kSchemaVersion},
            {"kind", "ladder.matrix"},
            {"run_id", o.run_id},
            {"mode", o.mode},
            {"parity_steps", o.parity_steps},
            {"repeats", o.repeats},
            {"peers", {{"names", o.peers}, {"source", o.peers_source}}},
            {"created_at", utc_now_iso8601()},
            {"argv", o.argv},
            {"cells", cells_to_json(cells)}};
  write_file_atomically((fs::path(o.run_dir) / "matrix.json").string(), j.dump(2) + "\n");
}

std::vector<Cell> load_run_dir(const std::string& run_dir, RunnerOptions& opts) {
  const fs::path path = fs::path(run_dir) / "matrix.json";
  auto j = read_json(path);
  if (!j || j->value("kind", "") != "ladder.matrix")
    throw ConfigError(fmt::format("--resume: '{}' is not a run directory (no readable matrix.json)", run_dir));
  std::vector<Cell> cells;
  try {
    for (const auto& c : (*j)["cells"]) {
      Cell cell;
      cell.id = c.at("id").get<std::string>();
      cell.role = c.at("role").get<std::string>();
      cell.cfg = c.at("config").get<RunConfig>();
      cell.runnable = c.at("runnable").get<bool>();
      cell.not_runnable_reason = c.at("not_runnable_reason").get<std::string>();
      cell.parity_ref = c.at("parity_ref").get<std::string>();
      cell.parity_subject = c.at("parity_subject").get<std::string>();
      cell.peer = c.value("peer", "");
      cells.push_back(cell);
    }
    opts.run_id = j->at("run_id").get<std::string>();
    opts.mode = j->at("mode").get<std::string>();
    opts.parity_steps = j->at("parity_steps").get<int64_t>();
    opts.repeats = j->value("repeats", 1);
    opts.peers.clear();
    opts.peers_source = "none recorded (a run from before --peers)";
    if (j->contains("peers")) {
      opts.peers = j->at("peers").at("names").get<std::vector<std::string>>();
      opts.peers_source = j->at("peers").at("source").get<std::string>();
    }
  } catch (const json::exception& e) {
    throw ConfigError(fmt::format("--resume: '{}' is malformed: {}", path.string(), e.what()));
  }
  return cells;
}

}  // namespace ladder
