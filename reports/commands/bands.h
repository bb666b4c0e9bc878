// reports/commands/bands.h: `ladder bands RUN [--peer NAME] [--format
// text|markdown|json] [--out FILE]`: a run's band tables
// (reports/render/sections/band_tables.h, run_band_table). Exit 0 printed, 1 the rung
// or a breakdown missing, 2 bad input, 3 no peer to compare against.
#pragma once

#include <string>
#include <vector>

namespace ladder {

int bands_command(const std::vector<std::string>& args);

}  // namespace ladder
