// reports/table.h: speedups and the final table of a run.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace ladder {

// Adds speedup_vs_fp32 and speedup_vs_previous (tokens/s ratios, so rungs
// with gradient accumulation compare fairly) to each ok summary row; the
// reference is the same shape's fp32 row and the previous ok row of that shape.
void add_speedups(nlohmann::json& rows);

// A run roofline's figures, "bf16 0.439, fp32 0.2, tf32 0.201" (TFLOP/s),
// from roofline.json's content (or the summary's roofline section).
std::string roofline_figures(const nlohmann::json& roofline);

// The table printed at the end of `ladder run`, from summary.json's content.
void print_summary_table(const nlohmann::json& summary, const std::string& summary_path);

}  // namespace ladder
