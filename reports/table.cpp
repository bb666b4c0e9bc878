// reports/table.cpp: see table.h.
#include "reports/table.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/peer_cells.h"
#include "reports/reporter.h"

namespace ladder {

using nlohmann::json;

namespace {
std::string shape_key(const json& row) {
  return fmt::format("{}|{}|{}", row.value("preset", ""), row.value("batch", 0), row.value("seq", 0));
}
}  // namespace

void add_speedups(json& rows) {
  std::map<std::string, double> fp32, previous;
  for (auto& row : rows)
    if (row["rung"] == "fp32" && row["status"] == "ok") fp32[shape_key(row)] = row["tokens_per_s_median"];
  for (auto& row : rows) {
    if (row["status"] != "ok") continue;
    const std::string key = shape_key(row);
    const double tok_s = row["tokens_per_s_median"];
    row["speedup_vs_fp32"] = fp32.count(key) ? json(tok_s / fp32[key]) : json();
    if (row.contains("peer")) {
      row["speedup_vs_previous"] = nullptr;  // a peer is not the next rung of the ladder
      continue;
    }
    row["speedup_vs_previous"] = previous.count(key) ? json(tok_s / previous[key]) : json();
    previous[key] = tok_s;
  }
}

void add_peer_ratios(json& rows, const std::string& base_rung) {
  std::map<std::string, double> base;
  for (const auto& row : rows)
    if (!row.contains("peer") && row["rung"] == base_rung && row["status"] == "ok")
      base[shape_key(row)] = row["tokens_per_s_median"];
  for (auto& row : rows) {
    if (!row.contains("peer") || row["status"] != "ok") continue;
    const std::string key = shape_key(row);
    const double peer = row["tokens_per_s_median"];
    row["ladder_vs_peer"] = {{"rung", base_rung},
                             {"tokens_per_s_ratio", base.count(key) ? json(base[key] / peer) : json()},
                             {"note", base.count(key) ? fmt::format("tokens/s of ladder {} over this peer's", base_rung)
                                                      : fmt::format("no ok {} row of this shape in the run", base_rung)}};
  }
}

std::string roofline_figures(const json& roofline) {
  std::string figures;
  for (const auto& [name, e] : roofline.at("precisions").items())
    figures += fmt::format("{}{} {:.3g}", figures.empty() ? "" : ", ", name, e.value("matmul_tflops", 0.0));
  return figures;
}

Document run_document(const json& summary, const std::string& summary_path) {
  Document doc;
  doc.kind = DocumentKind::kRun;
  doc.data = summary;
  Table t;
  t.columns = {{"rung", "rung", "", Align::kLeft},
               {"status", "status", "", Align::kLeft},
               {"dt_ms_median", "dt_ms", ""},
               {"tokens_per_s_median", "tok/s", ""},
               {"speedup_vs_fp32", "x fp32", ""},
               {"speedup_vs_previous", "x prev", ""},
               {"mfu_pct", "MFU %", ""},
               {"peak_bytes", "peak", "GiB"},
               {"ops_per_step", "ops/step", ""},
               {"parity", "parity", "", Align::kLeft},
               {"reason", "reason", "", Align::kLeft}};
  bool peers_header = false;
  for (const auto& row : summary["rows"]) {
    const std::string status = row["status"];
    const std::string name = peer_display_name(row["cell"].get<std::string>());
    if (row.contains("peer") && !peers_header) {
      peers_header = true;
      t.rows.push_back({{}, fmt::format("-- peers: PyTorch, the same model and switches as {}, each in its own Python "
                                        "process (not in loss parity) --",
                                        summary.value("peers", json::object()).value("compared_with", kPeerBaseRung))});
    }
    if (status != "ok") {
      std::string why = row.value("reason", "");
      if (row.contains("failure")) why = row["failure"].value("reason", "") + " " + row["failure"].value("message", "");
      Row r;
      r.cells = {{name, nullptr}, {status, nullptr, Tone::kBad}};
      r.cells.resize(t.columns.size() - 1, TableCell{"", ""});
      r.cells.push_back({why.substr(0, 90), why});
      t.rows.push_back(r);
      continue;
    }
    const json& ds = row["mfu_pct_datasheet"];
    TableCell mfu = ds.is_null() ? number_cell(row["mfu_pct_measured_roofline"], "{:.1f}", "p") : number_cell(ds, "{:.1f}");
    mfu.value = nullptr;  // the text, with its 'p': which peak the percentage is of
    const json& parity = row["parity"];
    std::string verdict = parity.value("status", "");
    if (row.contains("peer")) verdict = "not checked (peer)";
    if (parity.contains("worst_quantity")) {
      // The quantity that decided, and its value: "pass gnorm 3.3e-03<=2e-02".
      const json& worst = parity["worst_rel_diff"];
      const double rtol = parity["rtol"].get<double>();
      verdict += fmt::format(" {} {}{}{:.0e}", parity["worst_quantity"] == "grad_norm" ? "gnorm" : "loss",
                             worst.is_null() ? std::string("nan") : fmt::format("{:.1e}", worst.get<double>()),
                             !worst.is_null() && worst.get<double>() <= rtol ? "<=" : ">", rtol);
    }
    const Tone tone = verdict.rfind("fail", 0) == 0 ? Tone::kBad : row.contains("peer") ? Tone::kWarn : Tone::kGood;
    const auto& ops = row["op_counts"];
    const json op_count = ops.is_null() ? json()
                          : ops.value("cuda_kernels_per_step", 0) > 0 ? ops["cuda_kernels_per_step"]
                                                                       : json(ops.value("cpu_ops_per_step", 0));
    TableCell peak = number_cell(row["peak_bytes"].get<double>() / (1 << 30), "{:.2f}");
    peak.value = row["peak_bytes"];
    t.rows.push_back({{{name, nullptr},
                       {status, nullptr},
                       number_cell(row["dt_ms_median"], "{:.2f}"),
                       number_cell(row["tokens_per_s_median"], "{:.0f}"),
                       number_cell(row["speedup_vs_fp32"], "{:.2f}"),
                       number_cell(row["speedup_vs_previous"], "{:.2f}"),
                       mfu,
                       peak,
                       number_cell(op_count, "{:.0f}"),
                       {verdict, nullptr, tone},
                       {"", ""}}});
  }
  doc.tables.push_back(t);
  auto note = [&](std::string text, std::string lead = "", Tone tone = Tone::kPlain) {
    doc.notes.push_back({std::move(text), std::move(lead), tone});
  };
  // Each peer beside the top single-process rung: "ladder fused-adamw 0.79x of compile".
  std::string ratios;
  for (const auto& row : summary["rows"]) {
    if (!row.contains("ladder_vs_peer") || !row["ladder_vs_peer"]["tokens_per_s_ratio"].is_number()) continue;
    const std::string cell = row["cell"].get<std::string>();
    const size_t slash = cell.rfind('/');
    ratios += fmt::format("{}{}{} {:.2f}x of {}", ratios.empty() ? "" : ", ",
                          slash == std::string::npos ? "" : cell.substr(0, slash + 1),
                          row["ladder_vs_peer"]["rung"].get<std::string>(),
                          row["ladder_vs_peer"]["tokens_per_s_ratio"].get<double>(),
                          row["peer"].value("name", "?"));
  }
  if (!ratios.empty()) note(fmt::format("ladder {} (tokens/s; above 1 ladder is faster)", ratios), "peers:");
  const int repeats = summary.value("repeats", 1);
  if (repeats > 1)
    note(fmt::format("dt, tok/s, MFU: the median of {} per-process medians (--repeat {}, interleaved); peak: the "
                     "largest process's",
                     repeats, repeats));
  const json roofline = summary.value("roofline", json::object());
  if (roofline.value("status", "") == "ok") {
    note(fmt::format("roofline ('p'): {} TFLOP/s on {}, measured once for the run before the rungs",
                     roofline_figures(roofline), roofline.value("device", "?")));
  } else if (roofline.contains("reason")) {
    note(fmt::format("roofline ('p'): {}; each rung probed its own", roofline.value("reason", "")));
  }
  // Numeric switches that did not take effect on this device, in one line
  // each: their rungs ran the previous precision, and the table's speedups
  // show only what their other switches bought.
  auto not_effective_in = [&](const char* numeric) {
    std::string rungs;
    for (const auto& row : summary["rows"])
      if (row.value("status", "") == "ok" && row.contains("effective") && row["effective"].contains(numeric) &&
          !row["effective"][numeric].get<bool>())
        rungs += fmt::format("{}{}", rungs.empty() ? "" : ", ", peer_display_name(row["cell"].get<std::string>()));
    return rungs;
  };
  if (const std::string rungs = not_effective_in("tf32"); !rungs.empty())
    note(fmt::format("tf32: not effective in {}: no reduced-precision fp32 matmul mode on this device (see "
                     "switches.tf32.reason); those rungs ran fp32",
                     rungs));
  if (const std::string rungs = not_effective_in("bf16"); !rungs.empty()) {
    const json bf16_entry =
        roofline.contains("precisions") ? roofline["precisions"].value("bf16", json::object()) : json::object();
    note(fmt::format("not effective in {}: {}; their matmuls ran in fp32 (--cpu-bf16 auto; 'on' forces bf16)", rungs,
                     bf16_entry.contains("emulated_evidence")
                         ? "this CPU emulates bf16 matmuls (" + bf16_entry["emulated_evidence"].get<std::string>() + ")"
                         : std::string("see each report's switches.bf16.reason")),
         "bf16:", Tone::kWarn);
  }
  // Rows whose dt moved more than a quiet machine's (runner.cpp's noise
  // verdict), and 'p' MFU above 100 % (a roofline probe that ran slow).
  std::string noisy, over_roofline;
  double cv_limit = 0;
  for (const auto& row : summary["rows"]) {
    if (row.value("status", "") != "ok") continue;
    const std::string name = peer_display_name(row["cell"].get<std::string>());
    const json noise = row.value("noise", json::object());
    if (noise.contains("quiet") && !noise["quiet"].get<bool>()) {
      cv_limit = noise["cv_limit"].get<double>();
      noisy += fmt::format("{}{} (steps {:.1f} %{})", noisy.empty() ? "" : ", ", name,
                           100 * noise["steps_cv"].get<double>(),
                           noise["processes_cv"].is_number()
                               ? fmt::format(", processes {:.1f} %", 100 * noise["processes_cv"].get<double>())
                               : std::string());
    }
    if (row["mfu_pct_datasheet"].is_null() && row["mfu_pct_measured_roofline"].is_number() &&
        row["mfu_pct_measured_roofline"].get<double>() > 100)
      over_roofline += fmt::format("{}{}", over_roofline.empty() ? "" : ", ", name);
  }
  if (!noisy.empty())
    note(fmt::format("dt varied more than a quiet machine's {:.0f} % (CV) in {}: the machine was busy while they "
                     "ran, so differences of that size between runs are not findings; rerun them (with --repeat)",
                     100 * cv_limit, noisy),
         "noise:", Tone::kWarn);
  if (!over_roofline.empty())
    note(fmt::format("'p' MFU above 100 % in {}: the run's roofline probe ran slow (see roofline.json's "
                     "tflops_per_round)",
                     over_roofline),
         "roofline:", Tone::kWarn);
  note("MFU %: against the datasheet peak; 'p' marks MFU against the measured matmul roofline at the rung's "
       "precision (no datasheet entry). ops/step: CUDA kernels, or aten:: ops on CPU.");
  note("parity: the larger relative difference to the reference over the first steps, of the loss (loss) or the "
       "gradient norm (gnorm), against the rung's tolerance.");
  if (summary.contains("missing") && !summary["missing"].empty())
    note(fmt::format("{} cell(s) missing ({}): {}", summary["missing"].size(),
                     summary.value("status", "") == "stopped" ? "the run stopped" : "interrupted",
                     summary["missing"].dump()));
  if (summary.contains("stopped_because") && summary["stopped_because"].is_string())
    note("the run stopped " + summary["stopped_because"].get<std::string>());
  note("summary: " + summary_path);
  return doc;
}

void print_summary_table(const json& summary, const std::string& summary_path, const std::string& format) {
  const Reporter& reporter = find_reporter("--format", format, DocumentKind::kRun);
  Document doc = run_document(summary, summary_path);
  std::optional<LoadedRun> run;
  if (reporter.needs_reports()) {  // the run directory's reports, as `ladder export` reads them
    if (!std::filesystem::exists(summary_path)) {
      fmt::print(stderr, "ladder: --format {}: no summary.json to read the reports beside\n", format);
      return;
    }
    run = load_run(std::filesystem::path(summary_path).parent_path().string(), "A");
    doc.run = &*run;
  }
  fmt::print("{}", reporter.render(doc, {isatty(STDOUT_FILENO) != 0}));
}

}  // namespace ladder
