// bench/run/run_dir.cpp: see run_dir.h.
#include "bench/run/run_dir.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "profiler/common/atomic_file.h"
#include "reports/model/report/report.h"

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

std::optional<RungReport> read_run_report(const fs::path& path) {
  const auto j = read_json(path);
  return j ? std::optional<RungReport>(fields::from_json<RungReport>(*j, path.string())) : std::nullopt;
}

fs::path cell_dir(const RunnerOptions& o, const Cell& c, const std::string& side) {
  return fs::path(o.run_dir) / side / c.id;
}
fs::path cell_report(const RunnerOptions& o, const Cell& c, int round, const std::string& side) {
  return cell_dir(o, c, side) / repeat_subdir(round) / "report.json";
}
fs::path job_report(const RunnerOptions& o, const Job& j) { return cell_report(o, *j.cell, j.round, j.side); }
std::string job_name(const Job& j) {
  std::string name = (fs::path(j.side) / j.cell->id / repeat_subdir(j.round)).string();
  while (!name.empty() && name.back() == '/') name.pop_back();
  return name;
}
std::string relative_report(const Cell& c, int round, const std::string& side) {
  return (fs::path(side) / c.id / repeat_subdir(round) / "report.json").string();
}

bool report_complete(const RunnerOptions& o, const Job& j) {
  auto r = read_json(job_report(o, j));
  return r && r->value("status", "") == "ok";
}

void write_plan(const RunnerOptions& o, const std::vector<Job>& jobs) {
  json list = json::array();
  for (const auto& j : jobs) list.push_back({{"cell", j.cell->id}, {"round", j.round}, {"side", j.side}});
  write_file_atomically((fs::path(o.run_dir) / "plan.json").string(),
                        json{{"kind", "ladder.plan"}, {"jobs", list}}.dump(1) + "\n");
}

std::vector<Job> read_plan(const RunnerOptions& o, const std::vector<Cell>& cells) {
  const fs::path path = fs::path(o.run_dir) / "plan.json";
  auto j = read_json(path);
  if (!j) return {};
  std::vector<Job> jobs;
  try {
    for (const auto& e : j->at("jobs")) {
      const std::string id = e.at("cell").get<std::string>();
      const auto cell = std::find_if(cells.begin(), cells.end(), [&](const Cell& c) { return c.id == id; });
      if (cell == cells.end()) throw ConfigError(fmt::format("{}: job of cell '{}', not in matrix.json", path.string(), id));
      jobs.push_back({&*cell, e.at("round").get<int>(), e.value("side", "")});
    }
  } catch (const json::exception& e) {
    throw ConfigError(fmt::format("--resume: '{}' is malformed: {}", path.string(), e.what()));
  }
  return jobs;
}

void write_matrix_json(const std::vector<Cell>& cells, const RunnerOptions& o) {
  json j = {{"schema_version", kSchemaVersion},
            {"kind", "ladder.matrix"},
            {"run_id", o.run_id},
            {"mode", o.mode},
            {"parity_steps", o.parity_steps},
            {"repeats", o.repeats},
            {"repeat_auto", o.repeat_auto ? json{{"target_ci_pct", o.target_ci_pct}, {"time_budget_s", o.time_budget_s}}
                                          : json()},
            {"ab", o.sides.empty() ? json() : json{{"spec", o.ab_spec}, {"sides", o.sides},
                                                   {"side_a_exe", o.side_a_exe}, {"side_b_env", o.side_b_env}}},
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
    const json auto_section = j->value("repeat_auto", json());
    opts.repeat_auto = auto_section.is_object();
    if (opts.repeat_auto) {
      opts.target_ci_pct = auto_section.at("target_ci_pct").get<double>();
      opts.time_budget_s = auto_section.at("time_budget_s").get<double>();
    }
    const json ab = j->value("ab", json());
    if (ab.is_object()) {
      opts.ab_spec = ab.at("spec").get<std::string>();
      opts.sides = ab.at("sides").get<std::vector<std::string>>();
      opts.side_a_exe = ab.at("side_a_exe").get<std::string>();
      opts.side_b_env = ab.at("side_b_env").get<std::vector<std::pair<std::string, std::string>>>();
    }
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
