// reports/table.h: speedups and the final table of a run.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace ladder {

// Adds speedup_vs_fp32 and speedup_vs_previous (tokens/s ratios, so rungs
// with gradient accumulation compare fairly) to each ok summary row; the
// reference is the same shape's fp32 row and the previous ok row of that shape.
void add_speedups(nlohmann::json& rows);

// The table printed at the end of `ladder run`, from summary.json's content.
void print_summary_table(const nlohmann::json& summary, const std::string& summary_path);

}  // namespace ladder
