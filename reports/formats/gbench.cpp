// reports/formats/gbench.cpp: `--format gbench`, a run as google/benchmark
// JSON (a `context` and one `benchmarks` record per repetition, plus
// median/mean/stddev aggregates), so google/benchmark's tools/compare.py
// reads ladder runs too. It reads each rung's steps: the run's reports.
#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/stats/stats.h"
#include "reports/model/report/report_loader.h"
#include "reports/render/reporter.h"

namespace ladder {

using nlohmann::json;

namespace {

// google/benchmark's context: only what the run's report measured, the host
// CPU facts it read from /proc and /sys (environment.cpu_host) and its build
// type; nothing guessed.
json gbench_context(const LoadedRun& run) {
  const json env = run.environment();
  const json threads = env.contains("threads") ? env["threads"] : json::object();
  json context = {
      {"date", ""},
      {"executable", "ladder"},
      // Custom context keys, as google/benchmark's AddCustomContext writes them.
      {"ladder_run_id", run.run_id},
      {"ladder_device", env.contains("device") ? env["device"].value("name", "") : ""},
      {"ladder_libtorch", env.contains("versions") ? env["versions"].value("libtorch", "") : ""},
      {"ladder_threads", threads.value("intra_op", 0)},
  };
  if (env.contains("host")) context["host_name"] = env["host"];
  if (env.contains("cpu_logical_cores")) context["num_cpus"] = env["cpu_logical_cores"];
  if (env.contains("build_type") && env["build_type"].is_string()) {
    std::string type = env["build_type"].get<std::string>();
    for (char& ch : type) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    context["library_build_type"] = type;
  }
  if (env.contains("cpu_host"))
    for (const char* key : {"mhz_per_cpu", "caches", "load_avg", "cpu_scaling_enabled"})
      if (env["cpu_host"].contains(key)) context[key] = env["cpu_host"][key];
  context["ladder_repetition_unit"] = run.repeats.empty() ? "step (one process per rung)"
                                                          : fmt::format("process ({} per rung; each its median)",
                                                                        run.repeats.size());
  return context;
}

// The independent samples of a cell: each process's median with --repeat N
// (as compare tests them), else one process's steps. Empty when a process
// failed (no complete sample).
std::pair<std::vector<double>, std::vector<double>> cell_samples(const LoadedRun& run, size_t c) {
  const RungReport& r = run.reports[c];
  if (run.repeats.empty())
    return {r.steps->columns.at("dt_ms").values, r.steps->columns.at("tokens_per_s").values};
  std::vector<double> dts, toks;
  for (const auto& rep : run.repeats) {
    const RungReport* rr = rep.find(run.cells[c]);
    if (!rr || rr->status != "ok") return {};
    dts.push_back(rr->summary_value("dt_ms").value());
    toks.push_back(rr->summary_value("tokens_per_s").value());
  }
  return {dts, toks};
}

// One record per repetition, then the mean, median and stddev aggregates.
void add_records(json& benchmarks, const std::string& name, int family, const std::vector<double>& dts,
                 const std::vector<double>& toks) {
  const size_t n = dts.size();
  auto record = [&](const std::string& run_type, double dt, double tok_s) {
    return json{{"name", name}, {"family_index", family}, {"per_family_instance_index", 0}, {"run_name", name},
                {"run_type", run_type}, {"repetitions", n}, {"threads", 1}, {"iterations", 1},
                {"real_time", dt}, {"cpu_time", dt}, {"time_unit", "ms"}, {"tokens_per_s", tok_s}};
  };
  for (size_t i = 0; i < n; ++i) {
    json b = record("iteration", dts[i], toks[i]);
    b["repetition_index"] = i;
    benchmarks.push_back(b);
  }
  const Summary dt = summarize(dts), tok = summarize(toks);
  for (auto [agg, d, t] : {std::tuple{"mean", dt.mean, tok.mean}, std::tuple{"median", dt.median, tok.median},
                           std::tuple{"stddev", dt.stddev, tok.stddev}}) {
    json b = record("aggregate", d, t);
    b["name"] = name + "_" + agg;
    b["aggregate_name"] = agg;
    b["aggregate_unit"] = "time";
    benchmarks.push_back(b);
  }
}

// The gbench form of a run.
json to_gbench(const LoadedRun& run) {
  json context = gbench_context(run);
  json benchmarks = json::array();
  int family = 0;
  for (size_t c = 0; c < run.cells.size(); ++c) {
    const RungReport& r = run.reports[c];
    if (r.status != "ok") continue;
    if (context["date"] == "") context["date"] = r.started_at;
    const auto [dts, toks] = cell_samples(run, c);
    if (dts.empty()) continue;
    add_records(benchmarks, "ladder/" + run.cells[c], family++, dts, toks);
  }
  return {{"context", context}, {"benchmarks", benchmarks}};
}

class GbenchReporter : public Reporter {
 public:
  std::string name() const override { return "gbench"; }
  bool renders(DocumentKind kind) const override { return kind == DocumentKind::kRun; }
  bool needs_reports() const override { return true; }
  std::string render(const Document& doc, const RenderOptions&) const override {
    return to_gbench(*doc.run).dump(2) + "\n";
  }
};

}  // namespace

const Reporter& gbench_reporter() {
  static const GbenchReporter kReporter;
  return kReporter;
}

}  // namespace ladder
