// reports/render/sections/speed_of_light_table.h: a rung report's speed_of_light section
// (bench/measure/roofline/speed_of_light.h builds it) as a table: one row per band of
// the op breakdown with its measured ms, its floor, the ceiling that binds
// it, the efficiency and the headroom; the step's dt against its floor; and
// a closing line naming the band with the most headroom. What `ladder sol`,
// `ladder run`'s table, the run's page and `ladder compare` show. The pages
// (`ladder run --format html`, `ladder sol --format html`) also draw it as
// bars, each band's measured ms beside its floor, so the headroom is seen.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reports/model/report/speed_of_light_section.h"
#include "reports/render/chart.h"
#include "reports/model/run/run_model.h"
#include "reports/render/document.h"

namespace ladder {

// The table of one section; `rung` names it in the title ("fused-adamw").
Table speed_of_light_table(const SpeedOfLightSection& section, const std::string& rung);

// "largest headroom: elementwise/norm 4.81 ms (2.42x its floor)" (up to its
// floor: "(64 % of its floor)"), or why none.
Line speed_of_light_verdict(const SpeedOfLightSection& section);

// The section as bars: per band (the categories), the measured ms and the
// floor (two series), each bar's hover naming the efficiency and what binds.
// Its id: "chart-sol-<rung>".
Chart speed_of_light_chart(const SpeedOfLightSection& section, const std::string& rung);

// A run's top rung against its floors: the table and the chart.
struct SpeedOfLightView {
  Table table;
  Chart chart;
};
// Of the last row of `summary` that ran ok (a peer's aside) whose report in
// `run_dir` holds a speed_of_light section; nullopt when none does (a run
// made before the section existed).
std::optional<SpeedOfLightView> top_rung_speed_of_light(const RunSummary& run, const std::string& run_dir);

// Two sections side by side (ladder compare): per band each input's measured
// ms, floor and efficiency. `labels` name the inputs ("A", "B").
Table speed_of_light_comparison(const std::vector<SpeedOfLightSection>& sections,
                                const std::vector<std::string>& labels, const std::string& rung);

}  // namespace ladder
