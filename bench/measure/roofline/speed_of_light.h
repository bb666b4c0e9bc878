// bench/measure/roofline/speed_of_light.h: every band of a rung's step against the
// machine's own limits, so that the next speedup is named before anyone
// builds it.
//
// A site's floor is the larger of its FLOPs over the compute ceiling (the
// run's measured matmul TFLOP/s at the step's matmul precision, for the
// matmul-bound sites) and its bytes over the memory bandwidth that applies
// to its working set (the roofline's copy/triad ladder, or one datasheet
// figure where none was measured), or over the link for the ddp rung's
// collectives (variants/ops/work.h; Williams, Waterman and Patterson's roofline).
// A band's floor is the sum of its sites' (variants/work_model.h: the work
// of one optimizer step, from the config and the plan), set beside the op
// breakdown's measured ms of the same band (CUPTI on CUDA, Kineto on a CPU):
// efficiency = floor / measured, headroom = measured - floor. The step's
// floor is the sum of the bands' (no overlap assumed); idle/other has none.
//
// A floor above its measurement means the work model or the ceiling is
// wrong: each band says so (floor_above_measured), and the tests hold every
// recorded and measured run to none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "bench/measure/roofline/bandwidth.h"
#include "reports/model/report/rung_report.h"
#include "variants/config/config.h"
#include "variants/switches/switch.h"
#include "variants/ops/work.h"

namespace ladder {

// The ceilings a step is held to.
struct Ceilings {
  double matmul_tflops = 0;  // at the step's matmul precision; 0: unknown (no matmul floors)
  std::string matmul_precision;
  std::string matmul_basis;  // "measured: bf16 matmul roofline of the run (n 8192, best of 281)"
  std::optional<MemoryBandwidth> memory;  // measured: each site takes its working set's bandwidth
  double memory_gbps = 0;    // one figure where no ladder was measured (a datasheet's); 0: unknown
  std::string memory_basis;  // "measured: ...", "datasheet, not measured: H100 SXM (...)"
  double link_gbps = 0;      // the ddp rung's all-reduce bus bandwidth; 0: unknown (no link floors)
  std::string link_basis;
  // This process's own memory speed: its noise probe's sweep past the last-level
  // cache, just before and after its steps (bench/measure/observers/speed_probe.h), the best
  // repetition; 0: not known (a peer, a report from before 2026-12-03). On some
  // VMs memory runs at one of two speeds per process (a Zen 5 EPYC: 90 or 175 GB/s
  // at 64 MiB), and a run's one probe may have met the slower.
  double process_sweep_gbps = 0;
  int64_t process_sweep_bytes = 0;
  // The bandwidth for a working set of `bytes`: the measured ladder's, else memory_gbps;
  // at least this process's own sweep.
  double memory_gbps_for(double bytes) const;
};

struct SolSite {
  std::string name;
  int64_t count = 0;
  double flops = 0, bytes = 0;  // per optimizer step (count included)
  double floor_ms = 0;
  std::string binds;            // "compute", "memory", "link", or "unknown" (its ceiling was not measured)
};

struct SolBand {
  std::string band;             // the op breakdown's key: "gemm", "elementwise_norm", ...
  double measured_ms = 0;
  double floor_ms = 0;          // sum of its sites' floors (idle/other: 0)
  std::string binds;            // the ceiling that gives the larger share of its floor; "" without sites
  std::vector<SolSite> sites;   // largest floor first
  bool partial = false;         // a site's ceiling is unknown: the floor counts the others only
  double efficiency_pct() const;  // floor / measured, 100 at the speed of light
  double headroom_ms() const { return measured_ms - floor_ms; }
  bool floor_above_measured() const { return floor_ms > measured_ms * (1 + 1e-9); }
};

struct SpeedOfLight {
  Ceilings ceilings;
  std::vector<SolBand> bands;   // the breakdown's order; those with neither time nor work left out
  double dt_ms = 0;             // the step's median
  double floor_ms = 0;          // sum of the bands' floors
  std::vector<std::string> notes;
  double dt_over_floor() const { return floor_ms > 0 ? dt_ms / floor_ms : 0; }
  // The band with the most headroom above its floor, idle/other aside; nullptr when none has a floor.
  const SolBand* largest_headroom() const;
};

// The table of one step: `work` set against `ceilings`, beside the measured
// `categories_ms` (the op breakdown's ms per step, by band) and `dt_ms`.
SpeedOfLight speed_of_light(const WorkList& work, const Ceilings& ceilings,
                            const profiler::PerCategory<double>& categories_ms, double dt_ms);

// The same for a rung: the work of `cfg`'s step as `plan` runs it (bf16:
// whether autocast took effect; the report's model.n_params), held to the
// report's mfu (the matmul ceiling it measured against), the run's roofline
// (`roofline`, null when there is none: the datasheet's figures, marked not
// measured) for the memory bandwidth and the link, and the process's own
// noise-probe sweep; measured against the report's op_breakdown and
// summary. nullopt with `why` set when the report has no valid breakdown or
// no ceiling to hold it to.
std::optional<SpeedOfLight> speed_of_light_of_rung(const RungReport& report, const RunConfig& cfg,
                                                   const StepPlan& plan, bool bf16,
                                                   const std::optional<RooflineFile>& roofline, std::string* why);

// The same from a finished rung report alone (`ladder sol` on a report made
// before the section existed): its config read back, its plan made again
// from it, bf16 from its switches' effects.
std::optional<SpeedOfLight> speed_of_light_of_report(const RungReport& report,
                                                     const std::optional<RooflineFile>& roofline, std::string* why);

// The report's speed_of_light table (reports/model/report/speed_of_light_section.h).
SpeedOfLightSection sol_section(const SpeedOfLight& s);

// The section the report builder adds to a rung report (bench/measure/report/rung_report.h),
// from what the builder has: speed_of_light_of_rung, or {"unavailable": why}
// (also where the run's roofline file could not be read: `roofline_error`).
SolSection speed_of_light_section(const RungReport& report, const RunConfig& cfg, const StepPlan& plan, bool bf16,
                                      const std::optional<RooflineFile>& roofline,
                                      const std::string& roofline_error);

// `ladder sol RUN [--rung R] [--format F] [--out FILE]`: the table of each
// rung that ran in RUN (a `ladder run` directory; or one report.json),
// from its report's section, or computed from the report where it has none
// (runs recorded before it existed). Exit 0, 1 when no rung could be
// tabled, 2 bad input.
int sol_command(const std::vector<std::string>& args);

}  // namespace ladder
