// reports/model/report/report_loader.cpp: see report_loader.h.
#include "reports/model/report/report_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "profiler/common/cli.h"
#include "reports/model/report/report.h"
#include "profiler/common/config_error.h"

namespace ladder {

namespace fs = std::filesystem;
using nlohmann::json;

std::string parse_error_text(const json::parse_error& e) {
  // The parser quotes the bytes it last read ("; last read: '...'"), which
  // for a binary file are noise on the terminal: keep what it says, not them.
  std::string what = e.what();
  if (const size_t quote = what.find("; last read: "); quote != std::string::npos) what.erase(quote);
  for (char& ch : what)
    if (static_cast<unsigned char>(ch) >= 0x80 || (ch < 0x20 && ch != '\n')) ch = '?';
  return what;
}

json read_json_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ConfigError(fmt::format("{}: cannot read the file", path));
  std::stringstream buf;
  buf << f.rdbuf();
  try {
    return json::parse(buf.str());
  } catch (const json::parse_error& e) {
    throw ConfigError(fmt::format("{}: not valid JSON (truncated, or not UTF-8?) at byte {}: {}", path, e.byte,
                                  parse_error_text(e)));
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

// Sets `key` of `obj` (an object) to `value` where it is absent.
void fill(json& obj, const char* key, json value) {
  if (obj.is_object() && !obj.contains(key)) obj[key] = std::move(value);
}

// Schema 1 spelled three switches of report.switches with underscores; from
// schema 2 every switch has its one declared name (variants/switches/), as in
// config.switches.
void upgrade_switch_names(json& r) {
  if (!r.contains("switches") || !r["switches"].is_object()) return;
  for (const auto& [old_name, name] :
       {std::pair{"vocab_pad", "vocab-pad"}, {"fused_adamw", "fused-adamw"}, {"grad_accum", "grad-accum"}}) {
    auto& sw = r["switches"];
    if (sw.contains(old_name) && !sw.contains(name)) {
      sw[name] = sw[old_name];
      sw.erase(old_name);
    }
  }
}

// Schema 1's ddp entry said why no CUDA graph ran there in a string field,
// cuda_graph, where a switch now keeps its own typed figures
// (variants/config/switch_effect.h): the cuda-graph switch's own entry says
// it since schema 2, so the note joins the entry's reason.
void upgrade_switch_notes(json& r) {
  if (!r.contains("switches") || !r["switches"].is_object()) return;
  for (auto& [name, entry] : r["switches"].items()) {
    if (!entry.is_object() || !entry.contains("cuda_graph") || !entry["cuda_graph"].is_string()) continue;
    entry["reason"] = fmt::format("{}; cuda graph: {}", entry.value("reason", ""), entry["cuda_graph"].get<std::string>());
    entry.erase("cuda_graph");
  }
}

// The fields an ok report gained in schema 3 (2026-11-25 to -29), as unknown
// where the report could not know them (null), or as what the harness did
// then: no noise monitor, no steal reading, a fixed warm-up count.
void upgrade_ok_sections(json& r) {
  constexpr const char* kUnrecorded = "not recorded: a report of schema 1 or 2, from before the field";
  if (r.contains("memory") && r["memory"].is_object()) {
    json& memory = r["memory"];
    fill(memory, "cpu_allocator", nullptr);
    if (memory.contains("measured")) {
      fill(memory["measured"], "allocated_active_valid", false);
      fill(memory["measured"], "allocated_active_note", kUnrecorded);
    }
  }
  if (r.contains("mfu") && r["mfu"].contains("measured_roofline"))
    fill(r["mfu"]["measured_roofline"], "source", {{"measured", kUnrecorded}, {"file", nullptr}});
  if (r.contains("timing") && r["timing"].is_object()) {
    json& t = r["timing"];
    const json steps = t.value("warmup_steps_excluded", json(0));
    fill(t, "warmup", {{"min", steps}, {"max", steps}, {"window", 0}, {"tolerance_pct", 0.0}, {"steps_run", steps},
                       {"stopped", "fixed"},
                       {"rule", "not recorded (a report of schema 1 or 2): its warmup_steps_excluded steps"}});
    for (const char* key : {"test_slowdown_pct", "host_steal_ms", "host_steal_pct_of_wall", "noise"})
      fill(t, key, nullptr);
  }
}

// An older report read under today's schema: the switches under their
// declared names, the fields recorded since filled in (upgrade_ok_sections).
void upgrade_to_current(json& r) {
  const int version = r.value("schema_version", 0);
  if (version >= kSchemaVersion) return;
  if (version < 2) {
    upgrade_switch_names(r);
    upgrade_switch_notes(r);
  }
  upgrade_ok_sections(r);
  r["schema_version"] = kSchemaVersion;
}

// A complete ("ok") report must hold every figure compare and export read,
// as finite numbers: checked once here, so readers never meet a missing key.
// Every rung report, whatever its status, names its rung and its status.
void check_complete(const json& r, const std::string& path) {
  for (const char* key : {"rung", "status"})
    if (!r.contains(key) || !r[key].is_string() || r[key].get<std::string>().empty())
      throw ConfigError(fmt::format("{}: field '{}' is {}; expected a non-empty string (a rung report names "
                                    "its rung and its status)",
                                    path, key, r.contains(key) ? r[key].dump() : "missing"));
  if (r.value("status", "") != "ok") return;
  auto fail = [&](const std::string& key, const std::string& got, const char* expected) {
    throw ConfigError(fmt::format("{}: field '{}' is {}; expected {} (an incomplete report, or a NaN "
                                  "written as null)",
                                  path, key, got, expected));
  };
  auto at = [&](const std::string& dotted) -> const json* {
    const json* cur = &r;
    size_t start = 0;
    while (start <= dotted.size()) {
      const size_t end = std::min(dotted.find('.', start), dotted.size());
      const std::string part = dotted.substr(start, end - start);
      if (!cur->is_object() || !cur->contains(part)) return nullptr;
      cur = &(*cur)[part];
      start = end + 1;
    }
    return cur;
  };
  auto number = [&](const std::string& key, bool nullable) {
    const json* v = at(key);
    if (!v) fail(key, "missing", nullable ? "a number or null" : "a finite number");
    if (v->is_null() && nullable) return;
    if (!v->is_number()) fail(key, v->dump(), "a finite number");
  };
  const json* dt = at("steps.dt_ms");
  if (!dt || !dt->is_array() || dt->empty()) fail("steps.dt_ms", dt ? dt->dump().substr(0, 60) : "missing",
                                                  "a non-empty array of step times");
  for (size_t i = 0; i < dt->size(); ++i)
    if (!(*dt)[i].is_number()) fail(fmt::format("steps.dt_ms[{}]", i), (*dt)[i].dump(), "a finite number");
  const json* tok = at("steps.tokens_per_s");
  if (tok && tok->is_array())
    for (size_t i = 0; i < tok->size(); ++i)
      if (!(*tok)[i].is_number()) fail(fmt::format("steps.tokens_per_s[{}]", i), (*tok)[i].dump(), "a finite number");
  for (const char* key : {"summary.dt_ms.median", "summary.tokens_per_s.median", "mfu.measured_roofline.mfu_pct",
                          "memory.measured.peak_bytes"})
    number(key, false);
  number("mfu.datasheet.mfu_pct", true);
  const json* cfg = at("config");
  if (!cfg || !cfg->is_object()) fail("config", cfg ? cfg->dump().substr(0, 60) : "missing", "the run's config object");
}

// The placeholder of a cell without its report: only its status.
RungReport placeholder(const std::string& status) {
  RungReport r;
  r.status = status;
  return r;
}

// A report named by a summary row, or a placeholder when it is absent (its
// path goes to `missing` when the row says it ran ok).
RungReport load_row_report(const fs::path& dir, const json& row, std::string& file,
                           std::vector<std::string>& missing) {
  if (!row.contains("report") || !row["report"].is_string()) return placeholder(row.value("status", "missing"));
  const fs::path p = dir / row["report"].get<std::string>();
  if (!fs::exists(p)) {
    if (row.value("status", "") == "ok") missing.push_back(p.string());
    return placeholder("missing");
  }
  file = p.string();
  return read_rung_report(p.string());
}

}  // namespace

namespace {

// A rung report's parsed JSON (from `path`) as the struct: see read_rung_report.
RungReport rung_report_of(json r, const std::string& path) {
  check_version(r, path);
  if (r.value("kind", "") != "ladder.rung_report")
    throw ConfigError(fmt::format("{}: kind '{}' is not a rung report; expected ladder.rung_report", path,
                                  r["kind"].dump()));
  upgrade_to_current(r);
  check_complete(r, path);
  return fields::from_json<RungReport>(r, path);
}

}  // namespace

RungReport read_rung_report(const std::string& path) { return rung_report_of(read_json_file(path), path); }

const RungReport* LoadedRun::find(const std::string& cell) const {
  for (size_t i = 0; i < cells.size(); ++i)
    if (cells[i] == cell) return &reports[i];
  return nullptr;
}

json LoadedRun::environment() const {
  for (const auto& r : reports)
    if (r.status == "ok" && r.environment) return fields::to_json(*r.environment);
  return json::object();
}

json load_summary(const std::string& path) {
  json j = read_json_file(path);
  check_version(j, path);
  if (j.value("kind", "") != "ladder.run_summary")
    throw ConfigError(fmt::format("{}: kind '{}' is not a run summary; expected ladder.run_summary", path,
                                  j.value("kind", "?")));
  if (!j.contains("rows") || !j["rows"].is_array())
    throw ConfigError(fmt::format("{}: field 'rows' is missing; expected the summary's rows", path));
  if (j["schema_version"].get<int>() >= 3) return j;
  for (auto& row : j["rows"]) {  // schema 2: the MFU was two keys, the op count inside op_counts
    if (!row.is_object() || row.value("status", "") != "ok") continue;
    const json sheet = row.value("mfu_pct_datasheet", json());
    row["mfu_pct"] = sheet.is_number() ? sheet : row.value("mfu_pct_measured_roofline", json());
    row["markers"] = {{"mfu_pct", sheet.is_number() ? "" : "p"}};
    const json ops = row.value("op_counts", json());
    if (ops.is_object())
      row["ops_per_step"] = ops.value("cuda_kernels_per_step", 0) > 0 ? ops["cuda_kernels_per_step"]
                                                                     : ops.value("cpu_ops_per_step", json());
  }
  return j;
}

namespace {

// A summary's runs: its cells and their reports; with --repeat N, each
// process is a run of its own (run.repeats[k] holds every cell's report of
// repeat k+1).
void read_summary_rows(const json& j, const fs::path& file, LoadedRun& run) {
  if (!j.contains("rows") || !j["rows"].is_array())
    throw ConfigError(fmt::format("{}: field 'rows' is missing; expected the summary's rows", file.string()));
  int n_repeats = j.value("repeats", 1);
  if (n_repeats < 1)
    throw ConfigError(fmt::format("{}: field 'repeats' is {}; expected an integer >= 1", file.string(),
                                  j["repeats"].dump()));
  // --repeat auto adds rounds for some cells: as many repeats as rounds.
  for (const auto& row : j["rows"])
    for (const auto& k : row.value("rounds", json::array()))
      if (k.is_number_integer()) n_repeats = std::max(n_repeats, k.get<int>());
  if (n_repeats > 1) {
    run.repeats.resize(size_t(n_repeats));
    for (int k = 0; k < n_repeats; ++k) {
      run.repeats[size_t(k)].label = run.label;
      run.repeats[size_t(k)].path = fmt::format("{} (repeat {})", run.path, k + 1);
      run.repeats[size_t(k)].run_id = run.run_id;
    }
  }
  for (const auto& row : j["rows"]) {
    if (!row.contains("cell") || !row["cell"].is_string())
      throw ConfigError(fmt::format("{}: a row has no 'cell' name; expected a string", file.string()));
    std::string report_file;
    const std::string cell = row["cell"].get<std::string>();
    run.cells.push_back(cell);
    run.reports.push_back(load_row_report(file.parent_path(), row, report_file, run.missing_reports));
    run.files.push_back(report_file);
    // Each listed report goes to the repeat of its round (repeat k is round
    // k+1); a round the cell did not run in leaves it out of that repeat.
    const json listed = row.contains("repeats") ? row["repeats"].value("reports", json::array()) : json::array();
    json rounds = row.contains("repeats") ? row["repeats"].value("rounds", json()) : json();
    if (!rounds.is_array()) {  // summaries before rounds: repeat k+1 is listed k-th
      rounds = json::array();
      for (int k = 1; k <= n_repeats; ++k) rounds.push_back(k);
    }
    for (size_t i = 0; i < rounds.size() && n_repeats > 1; ++i) {
      const int k = rounds[i].get<int>() - 1;
      if (k < 0 || k >= n_repeats) continue;
      LoadedRun& rep = run.repeats[size_t(k)];
      std::string rep_file;
      json rep_row = row;
      if (i > 0) {
        if (i < listed.size() && listed[i].is_string()) rep_row["report"] = listed[i];
        else rep_row.erase("report");
      }
      rep.cells.push_back(cell);
      rep.reports.push_back(i == 0 ? run.reports.back()
                                   : load_row_report(file.parent_path(), rep_row, rep_file, run.missing_reports));
      rep.files.push_back(i == 0 ? report_file : rep_file);
    }
  }
}

// A summary whose complete cells all lack their reports has nothing to compare.
void check_reports_present(const LoadedRun& run, const fs::path& file) {
  if (run.missing_reports.empty()) return;
  for (const auto& r : run.reports)
    if (r.status == "ok") return;  // some are there: compared, the rest named as missing
  std::string files;
  for (size_t i = 0; i < run.missing_reports.size() && i < 4; ++i)
    files += fmt::format("{}  {}", i ? "\n" : "", run.missing_reports[i]);
  if (run.missing_reports.size() > 4) files += fmt::format("\n  ... and {} more", run.missing_reports.size() - 4);
  throw ConfigError(fmt::format("{}: none of the rung reports this summary lists is there, so it cannot be "
                                "compared; expected the run directory as written (summary.json beside "
                                "<rung>/report.json). Missing:\n  {}",
                                file.string(), files));
}

fs::path resolve_input(const std::string& path) {
  fs::path file = path;
  if (fs::is_directory(file)) {
    if (fs::exists(file / "summary.json")) return file / "summary.json";
    if (fs::exists(file / "report.json")) return file / "report.json";
    throw ConfigError(fmt::format("{}: not a run directory (no summary.json) nor a rung directory "
                                  "(no report.json)", path));
  }
  if (!fs::exists(file)) throw ConfigError(fmt::format("{}: no such file or directory", path));
  return file;
}

}  // namespace

std::vector<const LoadedRun*> processes_of(const LoadedRun& run) {
  std::vector<const LoadedRun*> out;
  if (run.repeats.empty()) out.push_back(&run);
  for (const auto& r : run.repeats) out.push_back(&r);
  return out;
}

LoadedRun load_run(const std::string& path, const std::string& label) {
  LoadedRun run;
  run.label = label;
  run.path = path;
  const fs::path file = resolve_input(path);
  json j = read_json_file(file.string());
  check_version(j, file.string());
  run.run_id = j.value("run_id", "");
  const std::string kind = j["kind"].get<std::string>();
  if (kind == "ladder.rung_report") {
    run.reports = {rung_report_of(std::move(j), file.string())};
    run.cells = {run.reports.front().rung};
    run.files = {file.string()};
  } else if (kind == "ladder.run_summary") {
    read_summary_rows(j, file, run);
    check_reports_present(run, file);
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
  for (const auto& p : parts) {
    LoadedRun run = load_run(p, label);
    if (run.repeats.empty()) group.repeats.push_back(std::move(run));
    else for (auto& rep : run.repeats) group.repeats.push_back(std::move(rep));  // a --repeat run's processes
  }
  const LoadedRun& first = group.repeats.front();
  group.label = label;
  group.path = paths;
  group.run_id = first.run_id + fmt::format(" (+{} more)", parts.size() - 1);
  group.cells = first.cells;
  group.reports = first.reports;
  group.files = first.files;
  return group;
}

std::string summary_file(const std::string& input) {
  namespace fs = std::filesystem;
  if (fs::is_directory(input))
    return fs::exists(fs::path(input) / "summary.json") ? (fs::path(input) / "summary.json").string() : "";
  return fs::path(input).filename() == "summary.json" ? input : "";
}

}  // namespace ladder
