// reports/model/run/run_model.h: a run's summary as structs.
//
// summary.json (bench/run/runner.cpp writes it) is read once, here, into a
// RunSummary: its rows as SummaryRow, each with its per-process samples, its
// figures (reports/model/report/run_figures.h) and its ratios (reports/model/run/ratios.h). The run
// table, the ratios and --repeat auto's planning work on these; the JSON is
// read and written only by the functions of reports/model/run/summary_json.h.
// Reading is lenient: an absent or mistyped field reads as absent, so an
// older summary or an odd row renders as dashes, never throws.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/common/fields.h"
#include "reports/model/report/slow_rank.h"
#include "reports/stats/inference.h"

namespace ladder {

// One value per process of a cell, with the round each process ran in
// (parallel lists); a value is NaN where the process has none.
struct ProcessSamples {
  std::vector<double> values;
  std::vector<int> rounds;
};

// A ratio of one row (reports/model/run/ratios.h): its estimate and 95 % interval, and
// the cell (without its side) it is against. `p` only where the kind tests
// (b_over_a).
struct RowRatio {
  std::optional<double> value;
  std::optional<std::pair<double, double>> interval;
  std::string against;
  std::optional<double> p;
  int left_out = 0;  // processes of the two cells left out as disturbed (not recorded: the rows' `disturbed` say it)
  RatioInterval as_interval() const;  // ratio 0 without a value, lo = hi = 0 without an interval
};

struct RowParity {
  bool recorded = false;  // the row has a parity object
  std::optional<std::string> status;  // pass, fail, baseline, not_checked, ...
  std::optional<std::string> worst_quantity;  // grad_norm or loss
  std::optional<double> worst_rel_diff;      // none: NaN
  double rtol = 0;
  std::optional<std::string> reason;
};

// The noise verdict of a row (bench/run/summary_rows.cpp).
struct RowNoise {
  bool recorded = false;
  std::optional<bool> quiet;
  double cv_limit = 0, steps_cv = 0;
  std::optional<double> processes_cv;
  std::vector<std::string> causes;
  std::vector<std::vector<std::string>> per_process_causes;  // parallel to the row's rounds
};

// A process of the row that the test of cells (reports/stats/block_design.h)
// left out of the ratios: its round, how many times slower it ran than its
// cell and round predict from the other processes, the test's p-value, and
// what its noise monitors named (none for a peer, or where they saw nothing).
struct RowDisturbed {
  int64_t round = 0;
  double slower_x = 1, p_value = 1;
  std::vector<std::string> causes;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("round", s.round, Doc().min(1));
    v("slower_x", s.slower_x, Doc("how many times slower the process ran than its cell and round predict").min(1));
    v("p_value", s.p_value, "the test's one-sided p-value, Bonferroni-adjusted over the processes tested");
    v("causes", s.causes, "what the process's noise monitors named");
  }
};

// A number as a summary wrote it: older summaries wrote byte and count
// figures as integers, newer ones as numbers; an export gives each back as
// it was written.
struct WrittenNumber {
  double value = 0;
  bool integer = false;
};

struct SummaryRow {
  std::string cell;   // a rung (fp32), B/<rung> on an A/B run's side B, <shape>/peer-eager
  std::string rung;   // fp32, top-fused; for a peer the rung it runs (fused-adamw)
  std::string side;   // "A", "B" in an A/B run, else ""
  std::string preset;
  long batch = 0, seq = 0;
  std::string status;  // ok, failed, not_run, ...
  std::string reason;  // why it did not run
  std::optional<std::string> failure;  // a failed row's failure: its reason and message
  std::optional<std::string> peer;  // the peer's name for a peer row
  ProcessSamples tokens_per_s;      // per process; one value for an older summary's row
  std::map<std::string, WrittenNumber> figures;  // by reports/model/report/run_figures.h key: those recorded as numbers
  std::map<std::string, std::string> markers;     // by figure key ("p")
  RowParity parity;
  RowNoise noise;
  std::map<std::string, bool> effective;  // enabled switch -> whether it took effect
  std::optional<int> processes;           // repeats.count, when recorded
  std::map<std::string, RowRatio> ratios;  // by ratio kind key (reports/model/run/ratios.h)
  std::vector<RowDisturbed> disturbed;     // left out of the ratios
  std::vector<SlowRank> slow_rank;         // a multi-rank cell's, per process that judged it
  // Its reports, relative to the run directory: the first process's (when
  // recorded), and every process's (repeats.reports, with --repeat).
  std::optional<std::string> report;
  std::vector<std::string> repeat_reports;

  bool ok() const { return status == "ok"; }
  bool is_peer() const { return peer.has_value(); }
  const std::string& why() const { return failure ? *failure : reason; }
  // The cell without its side (B/flash -> flash).
  std::string bare_cell() const;
  // The rows whose ratios go together: one shape of the matrix, on one side.
  std::string shape() const;
  std::optional<double> figure(const std::string& key) const;  // none when absent
  std::optional<WrittenNumber> written_figure(const std::string& key) const;
  std::string marker(const std::string& key) const;          // "" when absent
};

struct RepeatAuto {
  int rounds = 0;
  double elapsed_s = 0, target_ci_pct = 0, time_budget_s = 0;
  std::string stopped;
  std::vector<std::string> unresolved;  // "<cell> <ratio>"
};

struct RunRoofline {
  bool ok = false;
  std::string device, figures;  // figures: "bf16 0.439, fp32 0.2" (TFLOP/s)
  std::string memory;           // "DRAM copy 12.5, triad 13.6 GB/s (1024 MiB)"; "" where not measured
  std::optional<std::string> reason;
  std::optional<std::string> bf16_emulated_evidence;
};

struct RunSummary {
  std::string run_id, status, started_at, finished_at, mode;
  std::optional<std::string> ab_spec;  // --ab's spec in an A/B run
  std::string peers_compared_with;     // the rung the peers ran the switches of
  int repeats = 1;
  std::optional<RepeatAuto> repeat_auto;
  RunRoofline roofline;
  std::optional<std::string> resolution;  // its line
  size_t missing_count = 0;
  std::string missing;                    // the missing cells, as JSON
  std::optional<std::string> stopped_because;
  std::vector<SummaryRow> rows;
};

}  // namespace ladder
