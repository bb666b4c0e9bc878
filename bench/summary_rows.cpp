// bench/summary_rows.cpp: see summary_rows.h.
#include "bench/summary_rows.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "bench/run_dir.h"
#include "reports/stats.h"

namespace ladder {

using nlohmann::json;

json row_base(const Cell& c, const std::string& status, const json& parity) {
  return {{"cell", c.id},    {"preset", c.cfg.preset}, {"batch", c.cfg.batch},  {"seq", c.cfg.seq},
          {"rung", c.cfg.rung}, {"switches", c.cfg.sw},   {"status", status},      {"parity", parity}};
}

namespace {

double median_of(std::vector<double> v) { return summarize(std::move(v)).median; }

// Was the machine quiet while a cell ran? On a quiet machine dt varies by a
// few percent between the steps of a process and between processes (2-3 % CV
// for fp32 gpt2-124m B4 T64 on this repository's 2-core VM); past the limit,
// a difference of that size between two runs is the machine's, not the code's.
constexpr double kQuietCvLimit = 0.05;

json noise_verdict(double steps_cv, std::optional<double> processes_cv) {
  const bool quiet = steps_cv <= kQuietCvLimit && (!processes_cv || *processes_cv <= kQuietCvLimit);
  return {{"quiet", quiet},
          {"cv_limit", kQuietCvLimit},
          {"steps_cv", steps_cv},
          {"processes_cv", processes_cv ? json(*processes_cv) : json()},
          {"basis", "CV of dt over a process's measured steps (the median over processes) and, with --repeat, "
                    "over the per-process medians; quiet when both are within cv_limit"}};
}

}  // namespace

json summary_row(const Cell& c, const std::vector<json>& reports, const json& parity) {
  const json& first = reports.front();
  size_t bad = 0;
  while (bad < reports.size() && reports[bad].value("status", "missing") == "ok") ++bad;
  const json& deciding = bad < reports.size() ? reports[bad] : first;
  json row = row_base(c, deciding.value("status", "missing"), parity);
  row["report"] = relative_report(c, 1);
  if (reports.size() > 1) {
    json files = json::array();
    for (size_t k = 0; k < reports.size(); ++k) files.push_back(relative_report(c, int(k) + 1));
    row["repeats"] = {{"count", reports.size()}, {"reports", files}};
    if (bad < reports.size()) row["repeats"]["failed_repeat"] = bad + 1;
  }
  if (deciding.contains("failure")) row["failure"] = deciding["failure"];
  if (row["status"] != "ok") return row;
  std::vector<double> dt, dt_cv, tok, mfu_roof, mfu_sheet;
  int64_t peak = 0;
  for (const auto& r : reports) {
    const auto& s = r["summary"];
    dt.push_back(s["dt_ms"]["median"].get<double>());
    dt_cv.push_back(s["dt_ms"]["cv"].get<double>());
    tok.push_back(s["tokens_per_s"]["median"].get<double>());
    mfu_roof.push_back(r["mfu"]["measured_roofline"]["mfu_pct"].get<double>());
    if (r["mfu"]["datasheet"]["mfu_pct"].is_number()) mfu_sheet.push_back(r["mfu"]["datasheet"]["mfu_pct"].get<double>());
    peak = std::max(peak, r["memory"]["measured"]["peak_bytes"].get<int64_t>());
  }
  const size_t n = reports.size();
  const double steps_cv = median_of(dt_cv);
  const std::optional<double> processes_cv = n > 1 ? std::optional<double>(summarize(dt).cv) : std::nullopt;
  row["dt_ms_median"] = median_of(dt);
  row["dt_ms_cv"] = steps_cv;
  row["tokens_per_s_median"] = median_of(tok);
  row["sample"] = n == 1 ? fmt::format("the median of {} measured steps of one process",
                                       first["steps"]["dt_ms"].size())
                         : fmt::format("the median of {} per-process medians", n);
  if (processes_cv) {
    row["dt_ms_process_medians"] = dt;
    row["dt_ms_process_cv"] = *processes_cv;
  }
  row["noise"] = noise_verdict(steps_cv, processes_cv);
  if (first["timing"].contains("data_pct_of_dt")) row["data_pct_of_dt"] = first["timing"]["data_pct_of_dt"];
  row["mfu_pct_datasheet"] = mfu_sheet.size() == n ? json(median_of(mfu_sheet)) : json();
  row["mfu_pct_measured_roofline"] = median_of(mfu_roof);
  row["peak_bytes"] = peak;
  row["peak_kind"] = first["memory"]["measured"]["peak_kind"];
  row["op_counts"] = first["op_counts"];
  json effective = json::object();
  for (const auto& [name, sw] : first["switches"].items())
    if (sw.value("enabled", false)) effective[name] = sw.value("effective", false);
  row["effective"] = effective;
  return row;
}

}  // namespace ladder
