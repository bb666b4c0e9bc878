// reports/table.h: speedups and the final table of a run, as a Document.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "reports/document.h"

namespace ladder {

// Adds speedup_vs_fp32 and speedup_vs_previous (tokens/s ratios, so rungs
// with gradient accumulation compare fairly) to each ok summary row; the
// reference is the same shape's fp32 row and the previous ok row of that shape.
// Peer rows (bench/peers.h) get speedup_vs_fp32 but never act as the
// previous rung, and their speedup_vs_previous is null.
void add_speedups(nlohmann::json& rows);

// Ratios come with their 95 % interval (`<key>_interval`: [lo, hi], null with
// one process per cell) from the per-process tokens/s of the run's cells,
// rounds as blocks (reports/block_design.h), and name the cell they are
// against (`<key>_against`).
//
// Ablation (--mode ablation): adds effect_at_top to each top-X row (top's
// tokens/s over top-X's: what X buys at the top) and top+X row (top+X over
// top, for a switch beyond the ladder).
void add_ablation_effects(nlohmann::json& rows);

// A one-run A/B comparison (--ab): adds b_over_a to each of side B's rows:
// its tokens/s over side A's of the same cell, paired by round.
void add_side_ratios(nlohmann::json& rows);

// The degrees of freedom behind row[key]'s interval, a ratio the functions
// above set: for b_over_a the pairs less one; for a ratio between a run's
// cells, the residual degrees of freedom of its shape's block design. 0 when
// there is none.
double ratio_df(const nlohmann::json& rows, const nlohmann::json& row, const std::string& key);

// Adds ladder_vs_peer to each ok peer row: the tokens/s of the same shape's
// `base_rung` (the top single-process rung) over the peer's, "ladder
// fused-adamw 0.79x of compile"; null figures when that rung is not ok here.
void add_peer_ratios(nlohmann::json& rows, const std::string& base_rung);

// A run roofline's figures, "bf16 0.439, fp32 0.2, tf32 0.201" (TFLOP/s),
// from roofline.json's content (or the summary's roofline section).
std::string roofline_figures(const nlohmann::json& roofline);

// The run's table and the lines under it, from summary.json's content: what
// `ladder run` prints at its end and `ladder export` renders.
Document run_document(const nlohmann::json& summary, const std::string& summary_path);

// Prints run_document in `format` (a --format name, reports/reporter.h); a
// format that needs the reports reads them beside `summary_path`.
void print_summary_table(const nlohmann::json& summary, const std::string& summary_path,
                         const std::string& format = "text");

}  // namespace ladder
