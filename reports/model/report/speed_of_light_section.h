// reports/model/report/speed_of_light_section.h: a rung report's speed_of_light
// section as a struct (profiler/common/fields.h): its JSON and its schema
// come from the field lists below. The section holds what
// bench/measure/roofline/speed_of_light.h computes: per band of the op breakdown the
// measured ms, the floor from the step's work at the run's ceilings, the
// binding ceiling, efficiency and headroom. A report where there was no
// valid breakdown or no ceiling holds {"unavailable": why} instead, and one
// from before the section, null.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/common/fields.h"

namespace ladder {

struct SolCeilingsSection {
  std::optional<double> matmul_tflops, memory_gbps, link_gbps;  // null: not known
  std::string matmul_precision, matmul_basis, memory_basis, link_basis;
  bool memory_measured = false;
  ::ladder::fields::Maybe<double> process_sweep_gbps;  // absent: not known
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("matmul_tflops", s.matmul_tflops, Doc("the matmul ceiling at the step's precision; null: not measured"));
    v("matmul_precision", s.matmul_precision);
    v("matmul_basis", s.matmul_basis, Doc("where the matmul ceiling comes from"));
    v("memory_gbps", s.memory_gbps, Doc("one bandwidth figure where no ladder of working sets was measured"));
    v("memory_measured", s.memory_measured, Doc("each site takes its working set's measured bandwidth"));
    v("memory_basis", s.memory_basis);
    v("process_sweep_gbps", s.process_sweep_gbps,
      Doc("this process's own memory speed (its noise probe's sweep past the last-level cache, the best repetition): "
          "no working set's bandwidth is taken below it; absent: not known (a peer, a report from before 2026-12-03)"));
    v("link_gbps", s.link_gbps, Doc("the ddp rung's all-reduce bus bandwidth; null: not known"));
    v("link_basis", s.link_basis);
  }
};

struct SolSiteSection {
  std::string name, binds;
  int64_t count = 0;
  double flops = 0, bytes = 0, floor_ms = 0;  // per optimizer step, the count included
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("name", s.name);
    v("count", s.count, Doc().min(0));
    v("flops", s.flops, Doc().min(0));
    v("bytes", s.bytes, Doc().min(0));
    v("floor_ms", s.floor_ms, Doc().min(0));
    v("binds", s.binds, Doc("the ceiling of its floor").one_of({"compute", "memory", "link", "unknown"}));
  }
};

struct SolBandSection {
  std::string band;
  double measured_ms = 0, floor_ms = 0, headroom_ms = 0;
  std::optional<std::string> binds;        // null: a band without sites
  std::optional<double> efficiency_pct;    // null: no time or no floor
  bool partial = false, floor_above_measured = false;
  std::vector<SolSiteSection> sites;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("band", s.band, Doc("an op_breakdown category key"));
    v("measured_ms", s.measured_ms, Doc().min(0));
    v("floor_ms", s.floor_ms, Doc().min(0));
    v("binds", s.binds, Doc("the ceiling that gives the larger share of its floor")
                            .one_of({"compute", "memory", "link", "unknown"}));
    v("efficiency_pct", s.efficiency_pct, Doc("floor / measured, 100 at the speed of light"));
    v("headroom_ms", s.headroom_ms, Doc("measured - floor"));
    v("partial", s.partial, Doc("a site's ceiling was not measured: the floor counts the others"));
    v("floor_above_measured", s.floor_above_measured, Doc("true means the work model or a ceiling is wrong"));
    v("sites", s.sites, Doc("largest floor first"));
  }
};

struct SolStepSection {
  double dt_ms = 0, floor_ms = 0;
  std::optional<double> dt_over_floor;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("dt_ms", s.dt_ms);
    v("floor_ms", s.floor_ms);
    v("dt_over_floor", s.dt_over_floor);
  }
};

struct SolHeadroomSection {
  std::string band;
  double headroom_ms = 0, pct_of_floor = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("band", s.band);
    v("headroom_ms", s.headroom_ms);
    v("pct_of_floor", s.pct_of_floor);
  }
};

struct SpeedOfLightSection {
  std::string method;
  SolCeilingsSection ceilings;
  std::vector<SolBandSection> bands;
  SolStepSection step;
  std::optional<SolHeadroomSection> largest_headroom;  // null: no band has a floor
  std::vector<std::string> notes;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("method", s.method);
    v("ceilings", s.ceilings, Doc("what the step is held to"));
    v("bands", s.bands, Doc("the op breakdown's bands, in its order"));
    v("step", s.step);
    v("largest_headroom", s.largest_headroom, Doc("the band with the most headroom, idle/other aside"));
    v("notes", s.notes);
  }
};

// A rung report's speed_of_light: the table, or why there is none
// ({"unavailable": why}); one or the other (schema_extra). A report from
// before the section holds null (RungReport's optional).
struct SolSection {
  ::ladder::fields::Maybe<std::string> unavailable;
  ::ladder::fields::Inline<SpeedOfLightSection> table;
  // The table where the section holds one; null where it says why not.
  const SpeedOfLightSection* measured() const { return table ? &*table : nullptr; }
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("unavailable", s.unavailable, "why there is no table: no valid op breakdown, or no ceiling");
    v("table", s.table);
  }
  static void schema_extra(nlohmann::json& schema);
};

// A report's section: its table, or null (none, or unavailable).
const SpeedOfLightSection* sol_table(const ::ladder::fields::Maybe<std::optional<SolSection>>& section);

}  // namespace ladder
