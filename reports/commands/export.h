// reports/commands/export.h: `ladder export --format NAME RUN`, a finished run in any
// format that renders a run (reports/render/reporter.h): its table, or gbench,
// google/benchmark JSON (a `context` and one `benchmarks` record per measured
// step, as repetitions, plus median/mean/stddev aggregates), so
// google/benchmark's tools/compare.py can read ladder runs too.
#pragma once

#include <string>
#include <vector>

namespace ladder {

int export_command(const std::vector<std::string>& args);

}  // namespace ladder
