// bench/measure/roofline/speed_of_light.cpp: see speed_of_light.h.
#include "bench/measure/roofline/speed_of_light.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/measure/roofline/mfu.h"
#include "bench/measure/roofline/roofline.h"
#include "profiler/common/atomic_file.h"
#include "profiler/common/cli.h"
#include "profiler/common/config_error.h"
#include "profiler/trace/op_categories.h"
#include "reports/model/run/peer_cells.h"
#include "reports/model/run/summary_json.h"
#include "reports/model/report/report_loader.h"
#include "reports/model/report/speed_of_light_section.h"
#include "reports/render/reporter.h"
#include "reports/render/sections/speed_of_light_table.h"
#include "variants/config/config.h"
#include "variants/switches/switch.h"
#include "variants/work_model.h"

namespace ladder {

using json = nlohmann::json;

double Ceilings::memory_gbps_for(double bytes) const {
  const double run = memory && !memory->sizes.empty() ? bandwidth_for_working_set(*memory, int64_t(bytes)).best_gbps()
                                                      : memory_gbps;
  return std::max(run, process_sweep_gbps);
}

double SolBand::efficiency_pct() const { return measured_ms > 0 ? 100.0 * floor_ms / measured_ms : 0; }

const SolBand* SpeedOfLight::largest_headroom() const {
  const SolBand* best = nullptr;
  for (const auto& b : bands)
    if (b.band != "idle_other" && b.floor_ms > 0 && (!best || b.headroom_ms() > best->headroom_ms())) best = &b;
  return best;
}

namespace {

// One site's floor over a step: the larger of its compute and its memory (or link) time; "unknown"
// binds where a ceiling it needs was not measured (the floor then counts what is known, still a floor).
SolSite site_floor(const SiteWork& w, const Ceilings& c) {
  SolSite s{w.name, w.count, w.flops * double(w.count), w.bytes() * double(w.count), 0, "unknown"};
  const bool matmul = w.bound == WorkBound::kMatmul, link = w.bound == WorkBound::kLink;
  const double compute_ms = matmul && c.matmul_tflops > 0 ? s.flops / (c.matmul_tflops * 1e12) * 1e3 : 0;
  const double gbps = link ? c.link_gbps : c.memory_gbps_for(w.bytes());
  const double moving_ms = gbps > 0 ? s.bytes / (gbps * 1e9) * 1e3 : 0;
  s.floor_ms = std::max(compute_ms, moving_ms);
  if (gbps > 0 && (!matmul || c.matmul_tflops > 0))
    s.binds = matmul && compute_ms >= moving_ms ? "compute" : (link ? "link" : "memory");
  return s;
}

// The binding ceiling of a band: the one whose sites give the larger share of its floor.
std::string band_binds(const std::vector<SolSite>& sites) {
  std::map<std::string, double> by;
  for (const auto& s : sites) by[s.binds] += s.floor_ms;
  std::string best;
  double most = -1;
  for (const auto& [k, v] : by)
    if (v > most) best = k, most = v;
  return best;
}

}  // namespace

namespace {

// A ceiling is at least what the step itself reached. The link's is the
// all-reduce micro-benchmark's bus bandwidth, measured once before the rungs;
// on a 2-core VM the step's own collectives (Gloo over loopback) have moved
// their bytes up to 3x faster than it, which put the communication floor above
// its measurement. Where they did, the link ceiling is raised to the rate the
// step reached, and its basis says so.
Ceilings link_at_least_achieved(const WorkList& work, Ceilings c, const profiler::PerCategory<double>& categories_ms) {
  if (!(c.link_gbps > 0)) return c;
  std::map<profiler::Category, double> bytes;  // of the link-bound sites, by band
  for (const SiteWork& w : work.sites())
    if (w.bound == WorkBound::kLink) bytes[w.band] += w.bytes() * double(w.count);
  for (const auto& [band, b] : bytes) {
    const double ms = categories_ms[band];
    if (!(ms > 0)) continue;
    const double achieved_gbps = b / (ms * 1e-3) / 1e9;
    if (achieved_gbps <= c.link_gbps) continue;
    c.link_basis += fmt::format("; raised to {:.3g} GB/s, what the step's own {} reached (the micro-benchmark "
                                "measured {:.3g})",
                                achieved_gbps, profiler::category_key(band), c.link_gbps);
    c.link_gbps = achieved_gbps;
  }
  return c;
}

}  // namespace

SpeedOfLight speed_of_light(const WorkList& work, const Ceilings& measured_ceilings,
                            const profiler::PerCategory<double>& categories_ms, double dt_ms) {
  const Ceilings ceilings = link_at_least_achieved(work, measured_ceilings, categories_ms);
  SpeedOfLight sol;
  sol.ceilings = ceilings;
  sol.dt_ms = dt_ms;
  std::map<std::string, std::vector<SolSite>> by_band;
  for (const SiteWork& w : work.sites())
    by_band[profiler::category_key(w.band)].push_back(site_floor(w, ceilings));
  for (size_t i = 0; i < profiler::kCategoryCount; ++i) {
    const std::string key = profiler::category_key(profiler::Category(i));
    SolBand b;
    b.band = key;
    b.measured_ms = categories_ms.values[i];
    b.sites = std::move(by_band[key]);
    std::sort(b.sites.begin(), b.sites.end(), [](const SolSite& x, const SolSite& y) { return x.floor_ms > y.floor_ms; });
    for (const auto& s : b.sites) {
      b.floor_ms += s.floor_ms;
      b.partial = b.partial || s.binds == "unknown";
    }
    b.binds = band_binds(b.sites);
    if (b.measured_ms == 0 && b.sites.empty()) continue;
    sol.floor_ms += b.floor_ms;
    sol.bands.push_back(std::move(b));
  }
  if (!(ceilings.matmul_tflops > 0)) sol.notes.push_back("no matmul ceiling: the matmul sites' floors count their bytes only");
  if (!(ceilings.memory_gbps > 0) && !ceilings.memory)
    sol.notes.push_back("no memory bandwidth: the floors count the matmul sites' FLOPs only");
  for (const auto& b : sol.bands)
    if (b.floor_above_measured())
      sol.notes.push_back(fmt::format("{}: floor {:.3f} ms above the measured {:.3f} ms: the work model or a ceiling "
                                      "is wrong",
                                      b.band, b.floor_ms, b.measured_ms));
  return sol;
}

namespace {

std::string device_name_of(const RungReport& report) {
  if (!report.environment) return "";
  return report.environment->device.name.empty() ? report.environment->cpu_model : report.environment->device.name;
}

// The matmul ceiling the report's MFU 'p' divided by (the run's roofline at
// the step's precision), else the datasheet's.
void matmul_ceiling(const RungReport& report, Ceilings& c) {
  c.matmul_precision = report.mfu ? report.mfu->precision : precision_name(Precision::kFP32);
  if (!report.mfu) return;
  const MfuRoofline& measured = report.mfu->measured_roofline;
  c.matmul_tflops = measured.peak_tflops;
  c.matmul_basis = fmt::format("measured: the run's {} matmul roofline (n {}, best of {} reps)", c.matmul_precision,
                               measured.probe.n, measured.probe.reps);
}

// The memory ceiling: the run's measured ladder, else the datasheet's figure (marked not measured).
// The link: the all-reduce's bus bandwidth the run measured (bench/run/runner.cpp, measure_interconnect).
void link_ceiling(const std::optional<RooflineFile>& roofline, Ceilings& c) {
  if (!roofline || !roofline->interconnect) return;
  c.link_gbps = roofline->interconnect->busbw_gbps;
  c.link_basis = fmt::format("measured: the all-reduce micro-benchmark's bus bandwidth ({})",
                             roofline->interconnect->benchmark);
}

void memory_ceiling(const std::optional<RooflineFile>& roofline, const std::string& device, Ceilings& c) {
  if (roofline && roofline->memory) {
    c.memory = *roofline->memory;
    c.memory_gbps = c.memory->dram().best_gbps();
    c.memory_basis = fmt::format("measured: the best of copy, triad{} at {} working sets, {:.0f} GB/s at {:.0f} "
                                 "MiB (DRAM); each site takes its working set's",
                                 c.memory->dram().update_gbps ? " and update" : "", c.memory->sizes.size(),
                                 c.memory_gbps,
                                 double(c.memory->dram().working_set_bytes) / (1 << 20));
    return;
  }
  if (const auto sheet = datasheet_bandwidth(device)) {
    c.memory_gbps = sheet->gbps;
    c.memory_basis = fmt::format("datasheet, not measured: {} {:.0f} GB/s ({})", sheet->device, sheet->gbps,
                                 sheet->source);
  }
}

// This process's own sweep (Ceilings::process_sweep_gbps), from its report's
// noise probe: STREAM's bytes (the buffer read and written) over the best
// repetition, before or after the steps. It says so in the memory basis
// where it beat the run's probe at the same or a larger working set.
void process_sweep(const RungReport& report, Ceilings& c) {
  if (!report.timing || !report.timing->noise || !report.timing->noise->probe) return;
  const ProbeSection& probe = *report.timing->noise->probe;
  if (!probe.sweep_bytes || !(*probe.sweep_bytes > 0)) return;
  const int64_t bytes = *probe.sweep_bytes;
  double best_ms = 0;
  for (const auto* reading : {&probe.before, &probe.after}) {
    if (!*reading) continue;
    for (const double ms : (*reading)->sweep_reps_ms)
      if (ms > 0 && (best_ms == 0 || ms < best_ms)) best_ms = ms;
  }
  if (!(best_ms > 0)) return;
  const double run = c.memory_gbps_for(double(bytes));  // the run's alone: no sweep counted yet
  c.process_sweep_bytes = bytes;
  c.process_sweep_gbps = 2.0 * double(c.process_sweep_bytes) / (best_ms * 1e6);
  if (run > 0 && c.process_sweep_gbps > run)
    c.memory_basis += fmt::format("; at least this process's own sweep, {:.0f} GB/s at {:.0f} MiB (its noise "
                                  "probe's best repetition, above the run's {:.0f} GB/s there)",
                                  c.process_sweep_gbps, double(c.process_sweep_bytes) / (1 << 20), run);
}

}  // namespace

std::optional<SpeedOfLight> speed_of_light_of_rung(const RungReport& report, const RunConfig& cfg,
                                                   const StepPlan& plan, bool bf16,
                                                   const std::optional<RooflineFile>& roofline, std::string* why) {
  auto fail = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return std::optional<SpeedOfLight>();
  };
  const bool has = report.op_breakdown && *report.op_breakdown;
  const profiler::OpBreakdownSection* b = has ? &**report.op_breakdown : nullptr;
  if (!b || !b->categories_ms || b->valid == false)
    return fail("no valid op_breakdown (run with the breakdown: it is on by default in `ladder run`)");
  const std::optional<double> dt = report.summary_value("dt_ms");
  if (!dt) return fail("no summary.dt_ms.median");
  if (!report.model) return fail("no model.n_params");
  const bool on_cuda = cfg.device.rfind("cuda", 0) == 0;
  const WorkList work = step_work(work_shape(cfg, bf16), work_flags(cfg, plan, on_cuda, bf16, report.model->n_params));
  Ceilings c;
  matmul_ceiling(report, c);
  memory_ceiling(roofline, device_name_of(report), c);
  process_sweep(report, c);
  link_ceiling(roofline, c);
  if (!(c.matmul_tflops > 0) && !(c.memory_gbps > 0)) return fail("no ceiling: neither a matmul roofline nor a bandwidth");
  return speed_of_light(work, c, *b->categories_ms, *dt);
}

std::optional<SpeedOfLight> speed_of_light_of_report(const RungReport& report,
                                                     const std::optional<RooflineFile>& roofline, std::string* why) {
  const bool bf16 = report.switches && took_effect(*report.switches, switches::bf16.name);
  return speed_of_light_of_rung(report, report.config, plan_for(report.config), bf16, roofline, why);
}

SpeedOfLightSection sol_section(const SpeedOfLight& s) {
  const Ceilings& c = s.ceilings;
  auto known = [](double v) { return v > 0 ? std::optional<double>(v) : std::nullopt; };
  SpeedOfLightSection out;
  out.method = "floor = max(FLOPs / matmul ceiling, bytes / bandwidth of the working set) per site "
               "(variants/work_model.h, bench/measure/roofline/speed_of_light.h), summed per band of the op breakdown";
  out.ceilings = {known(c.matmul_tflops), known(c.memory_gbps), known(c.link_gbps), c.matmul_precision,
                  c.matmul_basis, c.memory_basis, c.link_basis, c.memory.has_value(), known(c.process_sweep_gbps)};
  for (const auto& b : s.bands) {
    SolBandSection band{b.band, b.measured_ms, b.floor_ms, b.headroom_ms(),
                        b.binds.empty() ? std::nullopt : std::optional<std::string>(b.binds),
                        known(b.measured_ms > 0 && b.floor_ms > 0 ? b.efficiency_pct() : 0), b.partial,
                        b.floor_above_measured(), {}};
    for (const auto& x : b.sites) band.sites.push_back({x.name, x.binds, x.count, x.flops, x.bytes, x.floor_ms});
    out.bands.push_back(std::move(band));
  }
  out.step = {s.dt_ms, s.floor_ms, known(s.dt_over_floor())};
  if (const SolBand* l = s.largest_headroom())
    out.largest_headroom = SolHeadroomSection{l->band, l->headroom_ms(), 100.0 * l->headroom_ms() / l->floor_ms};
  out.notes = s.notes;
  return out;
}

SolSection speed_of_light_section(const RungReport& report, const RunConfig& cfg, const StepPlan& plan, bool bf16,
                           const std::optional<RooflineFile>& roofline, const std::string& roofline_error) {
  SolSection out;
  if (!roofline_error.empty()) {
    out.unavailable = roofline_error;
    return out;
  }
  std::string why;
  try {
    if (const auto sol = speed_of_light_of_rung(report, cfg, plan, bf16, roofline, &why)) {
      out.table = sol_section(*sol);
      return out;
    }
  } catch (const std::exception& e) {
    why = e.what();
  }
  out.unavailable = why;
  return out;
}

namespace {

// The section of one report: its own, else computed from it with the run's roofline (`run_dir`/roofline.json).
std::optional<SpeedOfLightSection> section_of(const RungReport& report, const std::string& run_dir,
                                              std::string* why) {
  if (const SpeedOfLightSection* own = sol_table(report.speed_of_light)) return *own;
  std::optional<RooflineFile> roofline;
  const auto roof_path = std::filesystem::path(run_dir) / "roofline.json";
  if (!run_dir.empty() && std::filesystem::exists(roof_path)) roofline = read_roofline_file(roof_path.string());
  const auto sol = speed_of_light_of_report(report, roofline, why);
  if (!sol) return std::nullopt;
  return sol_section(*sol);
}

// (rung, report path) of each rung of a run that ran ok, in the summary's order; peers left out.
std::vector<std::pair<std::string, std::string>> run_reports(const std::string& input, std::string* run_dir) {
  namespace fs = std::filesystem;
  if (fs::path(input).filename() == "report.json" || (fs::is_regular_file(input) && !fs::is_directory(input) &&
                                                      fs::path(input).filename() != "summary.json")) {
    *run_dir = fs::path(input).parent_path().parent_path().string();
    return {{fs::path(input).parent_path().filename().string(), input}};
  }
  const std::string summary_path = summary_file(input);
  if (summary_path.empty())
    throw ConfigError(fmt::format("sol: '{}' is neither a `ladder run` directory (no summary.json) nor a report.json",
                                  input));
  *run_dir = fs::path(summary_path).parent_path().string();
  std::vector<std::pair<std::string, std::string>> out;
  for (const SummaryRow& row : read_run_summary(load_summary(summary_path)).rows) {
    if (!row.ok() || is_peer_cell(row.cell)) continue;
    out.emplace_back(row.cell, (fs::path(*run_dir) / row.report.value_or(row.cell + "/report.json")).string());
  }
  return out;
}

}  // namespace

int sol_command(const std::vector<std::string>& args) {
  std::string rung;
  std::vector<std::string> inputs;
  ArgParser ap("sol",
               "Each rung's step against the machine's own limits, band by band: the floor of each band (its "
               "FLOPs at the matmul ceiling, its bytes at the memory bandwidth), the measured ms, the "
               "efficiency and the headroom: ladder sol RUN [--rung R] [--format text|markdown|json|html].\n"
               "RUN is a `ladder run` directory (or its summary.json, or one report.json). Reports made before "
               "the section existed are computed from their config, op breakdown and roofline (the datasheet's "
               "bandwidth where the run measured none, marked so). Exit 0, 1 no rung could be tabled, 2 bad input.");
  ap.add_value("--rung", "R", "only this rung (a cell of the run)", [&](const std::string& v) { rung = v; });
  const TableOutputOptions output(ap, {"text", "markdown", "json", "html"},
                                  "(each rung's table, and its bands drawn as bars against their floors)");
  ap.allow_positionals(&inputs);
  if (!ap.parse(args)) return 0;
  const std::string& input = one_input("sol", inputs, "RUN directory");
  output.check("sol");
  std::string run_dir;
  auto reports = run_reports(input, &run_dir);
  if (!rung.empty()) {
    reports.erase(std::remove_if(reports.begin(), reports.end(), [&](const auto& r) { return r.first != rung; }),
                  reports.end());
    if (reports.empty())
      throw ConfigError(fmt::format("sol: --rung '{}': no such rung ran ok in {}", rung, input));
  }
  Document doc;
  doc.title = "ladder sol: " + input;
  doc.data = {{"run", input}, {"rungs", json::object()}};
  for (const auto& [cell, path] : reports) {
    std::string why;
    std::optional<SpeedOfLightSection> typed;
    try {
      typed = section_of(read_rung_report(path), run_dir, &why);
    } catch (const ConfigError& e) {
      why = e.what();
    }
    if (!typed) {
      doc.notes.push_back({why, cell + ":"});
      continue;
    }
    doc.tables.push_back(speed_of_light_table(*typed, cell));
    doc.charts.push_back(speed_of_light_chart(*typed, cell));
    doc.data["rungs"][cell] = fields::to_json(*typed);
  }
  const Reporter& reporter = find_reporter("--format", output.format, DocumentKind::kRun);
  print_or_write(reporter.render(doc, {output.out.empty() && isatty(STDOUT_FILENO) != 0}), output.out);
  return doc.tables.empty() ? 1 : 0;
}

}  // namespace ladder
