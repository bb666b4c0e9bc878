// reports/commands/nsys_import.cpp: see nsys_import.h.
#include "reports/commands/nsys_import.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profiler/common/cli.h"
#include "profiler/common/config_error.h"
#include "profiler/nsys/nsys_sqlite.h"
#include "reports/model/comparison/kernel_family.h"
#include "reports/model/report/report_loader.h"
#include "reports/render/reporter.h"

namespace ladder {

using json = nlohmann::json;
namespace pf = profiler;

namespace {

// One column: a process of an export, or the ladder report beside them.
struct Source {
  std::string label;
  pf::OpBreakdownSection section;
  std::vector<std::string> notes;
};

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// A table with a first column `key` and one column of ms per source.
Table per_source_table(const std::string& title, const std::string& key, const std::vector<Source>& sources) {
  Table t;
  t.title = title;
  t.columns.push_back({key, key, "", Align::kLeft});
  for (const auto& s : sources) t.columns.push_back({slug(s.label) + "_ms", s.label, ""});
  return t;
}

// One row: `label`, then each source's value (`value` returns none for '-').
template <class F>
Row value_row(const std::string& label, const std::vector<Source>& sources, const char* format, F&& value) {
  Row r({TableCell(label)});
  for (const auto& s : sources) {
    const std::optional<double> v = value(s.section);
    r.cells.push_back(v ? number_cell(*v, format) : TableCell("-"));
  }
  return r;
}

Table band_table(const std::vector<Source>& sources) {
  Table t = per_source_table("bands, ms per step", "band", sources);
  for (size_t i = 0; i < pf::kCategoryCount; ++i)
    t.rows.push_back(value_row(pf::category_key(pf::Category(i)), sources, "{:.3f}", [&](const pf::OpBreakdownSection& b) {
      return b.categories_ms ? std::optional<double>(b.categories_ms->values[i]) : std::nullopt;
    }));
  t.rows.push_back(value_row("step dt", sources, "{:.3f}", [](const pf::OpBreakdownSection& b) {
    return b.step_dt_ms ? std::optional<double>(*b.step_dt_ms) : std::nullopt;
  }));
  t.notes.push_back({"an Nsight column's step dt is the host time of its 'step <rung>' ranges; a ladder report's, the "
                     "harness's dt of its profiled steps"});
  return t;
}

Table phase_table(const std::vector<Source>& sources) {
  Table t = per_source_table("phases, ms per step (device time of what each phase launched)", "phase", sources);
  const std::vector<std::pair<const char*, double pf::PhasesMs::*>> phases = {
      {"data", &pf::PhasesMs::data},         {"forward", &pf::PhasesMs::forward},
      {"backward", &pf::PhasesMs::backward}, {"optimizer", &pf::PhasesMs::optimizer},
      {"communication", &pf::PhasesMs::communication}, {"outside", &pf::PhasesMs::outside}};
  for (const auto& [name, field] : phases)
    t.rows.push_back(value_row(name, sources, "{:.3f}", [field = field](const pf::OpBreakdownSection& b) {
      return b.phases_ms ? std::optional<double>((*b.phases_ms).*field) : std::nullopt;
    }));
  std::set<std::string> layers;
  for (const auto& s : sources)
    if (s.section.layers_ms)
      for (const auto& [name, v] : *s.section.layers_ms) layers.insert(name);
  for (const std::string& name : layers)
    t.rows.push_back(value_row(name, sources, "{:.3f}", [&](const pf::OpBreakdownSection& b) {
      return b.layers_ms && b.layers_ms->count(name) ? std::optional<double>(b.layers_ms->at(name)) : std::nullopt;
    }));
  t.rows.push_back(value_row("in phases, %", sources, "{:.1f}", [](const pf::OpBreakdownSection& b) {
    return b.phases_pct_of_busy ? std::optional<double>(*b.phases_pct_of_busy) : std::nullopt;
  }));
  t.notes.push_back({"each kernel counts in the innermost phase range open on its launching thread at launch (on the "
                     "autograd thread, the phase open on the main thread); '-': the source has no phases"});
  return t;
}

// Kernels by family (reports/model/comparison/kernel_family.h): ms and calls per step in each source.
Table kernel_table(const std::vector<Source>& sources, size_t limit) {
  struct Cell {
    double ms = 0, calls = 0;
  };
  std::map<std::pair<std::string, std::string>, std::vector<Cell>> families;  // (band, family) -> per source
  for (size_t i = 0; i < sources.size(); ++i)
    if (sources[i].section.kernels)
      for (const auto& k : *sources[i].section.kernels) {
        auto& cells = families[{k.band, kernel_family(k.name)}];
        cells.resize(sources.size());
        cells[i].ms += k.ms;
        cells[i].calls += k.calls;
      }
  std::vector<std::pair<const std::pair<std::string, std::string>*, const std::vector<Cell>*>> order;
  for (const auto& [key, cells] : families) order.emplace_back(&key, &cells);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    double ma = 0, mb = 0;
    for (const Cell& c : *a.second) ma = std::max(ma, c.ms);
    for (const Cell& c : *b.second) mb = std::max(mb, c.ms);
    return ma > mb;
  });
  Table t;
  t.title = "kernels by family, ms per step (calls per step)";
  t.columns.push_back({"band", "band", "", Align::kLeft});
  t.columns.push_back({"family", "family", "", Align::kLeft, true});
  for (const auto& s : sources) {
    t.columns.push_back({slug(s.label) + "_ms", s.label, ""});
    t.columns.push_back({slug(s.label) + "_calls", "calls", ""});
  }
  const size_t shown = limit == 0 ? order.size() : std::min(limit, order.size());
  for (size_t k = 0; k < shown; ++k) {
    Row r({TableCell(order[k].first->first), TableCell(order[k].first->second)});
    for (const Cell& c : *order[k].second) {
      r.cells.push_back(number_cell(c.ms, "{:.3f}"));
      r.cells.push_back(number_cell(c.calls, "{:.0f}"));
    }
    t.rows.push_back(std::move(r));
  }
  if (shown < order.size())
    t.notes.push_back({fmt::format("{} more families, each smaller; --kernels 0 lists all {}", order.size() - shown,
                                   order.size())});
  t.notes.push_back({"a family is a kernel's name without template arguments, tile shapes or architecture tokens, so "
                     "that two builds' kernels line up; the JSON holds every kernel's whole name"});
  return t;
}

}  // namespace

int nsys_import_command(const std::vector<std::string>& args) {
  std::string report;
  size_t limit = 20;
  std::vector<std::string> inputs;
  ArgParser ap("nsys-import",
               "An Nsight Systems capture of ladder as the op breakdown's tables: ladder nsys-import EXPORT.sqlite... "
               "[--report REPORT.json]. EXPORT is `nsys export --type sqlite --output EXPORT.sqlite REPORT.nsys-rep` "
               "of a capture with CUDA and NVTX traced (scripts/nsys writes one per rank). Each process is a column: "
               "its bands, its phases (each kernel in the NVTX phase range open where it was launched) and its "
               "kernels by family, per 'step <rung>' range. Exit 0 printed, 2 bad input.");
  ap.add_value("--report", "FILE", "a ladder rung report (report.json) whose own tables go beside, as a column",
               [&](const std::string& v) { report = v; });
  ap.add_value("--kernels", "N", "kernel families listed, largest first (default 20; 0: all)",
               [&](const std::string& v) {
                 const int64_t n = parse_int("--kernels", v);
                 if (n < 0) throw ConfigError(fmt::format("--kernels: got {}, expected 0 (all) or more", n));
                 limit = size_t(n);
               });
  const TableOutputOptions output(ap, {"text", "markdown", "json"});
  ap.allow_positionals(&inputs);
  if (!ap.parse(args)) return 0;
  if (inputs.empty()) throw ConfigError("nsys-import: no input; expected one or more EXPORT.sqlite files");
  output.check("nsys-import");

  std::vector<Source> sources;
  json data = {{"inputs", json::array()}};
  for (const std::string& path : inputs) {
    const std::vector<pf::Capture> captures = pf::read_nsys_sqlite(path);
    const std::string stem = std::filesystem::path(path).stem().string();
    for (const pf::Capture& c : captures) {
      pf::ImportedCapture imported = pf::import_capture(c, path);
      Source s{captures.size() == 1 ? stem : fmt::format("{}:{}", stem, c.pid), imported.section, imported.notes};
      data["inputs"].push_back({{"label", s.label}, {"file", path}, {"pid", c.pid}, {"rung", imported.rung},
                                {"op_breakdown", fields::to_json(imported.section)}, {"notes", imported.notes}});
      sources.push_back(std::move(s));
    }
  }
  if (!report.empty()) {
    const RungReport r = read_rung_report(report);
    if (!r.op_breakdown || !*r.op_breakdown || (*r.op_breakdown)->unavailable)
      throw ConfigError(fmt::format("nsys-import: --report {}: no op_breakdown; expected a report measured with its "
                                    "op breakdown (not --no-op-count, as a run under nsys is)",
                                    report));
    sources.push_back({"ladder " + std::filesystem::path(report).parent_path().filename().string(),
                       **r.op_breakdown, {}});
    data["report"] = report;
  }
  Document doc;
  doc.title = "ladder nsys-import: " + inputs.front() + (inputs.size() > 1 ? fmt::format(" and {} more", inputs.size() - 1) : "");
  doc.tables = {band_table(sources), phase_table(sources), kernel_table(sources, limit)};
  for (const Source& s : sources)
    for (const std::string& n : s.notes) doc.notes.push_back({n, s.label + ":"});
  data["tables"] = json::array();
  for (const auto& t : doc.tables) data["tables"].push_back(table_json(t));
  doc.data = std::move(data);
  const Reporter& reporter = find_reporter("--format", output.format, DocumentKind::kRun);
  print_or_write(reporter.render(doc, {output.out.empty() && isatty(STDOUT_FILENO) != 0}), output.out);
  return 0;
}

}  // namespace ladder
