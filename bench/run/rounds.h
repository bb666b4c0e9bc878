// bench/run/rounds.h: which processes a run makes, round by round.
//
// A process is the independent sample of a rung (its steps are not), and a
// machine drifts over minutes, so every rung runs in several processes,
// interleaved: round 1 runs every runnable cell (the parity references only
// then), each later round every measured cell and peer again, so drift hits
// every rung alike (the rounds are the blocks of reports/stats/block_design.h).
// `--repeat N` makes N rounds (2 by default). `--repeat auto` then adds one
// round at a time for the cells whose ratios are still wider than the target
// (--target-ci), with the cells they are against, until none is or the time
// budget (--time-budget) would be exceeded. In a one-run A/B comparison
// (--ab) every job runs once per side, A then B in odd rounds and B then A in
// even ones, so neither side always runs first.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "bench/run/matrix.h"
#include "bench/run/run_dir.h"
#include "bench/run/runner_options.h"
#include "reports/model/run/summary_doc.h"
#include "reports/model/run/run_model.h"

namespace ladder {

inline constexpr int kMaxAutoRounds = 20;

// The first o.repeats rounds.
std::vector<Job> first_rounds(const std::vector<Cell>& cells, const RunnerOptions& o);

// A ratio of the run's table still wider than the target: `cell`'s against
// `against` (both cell ids, with their side for A/B), and its interval's
// half-width (infinite when there is no interval yet).
struct WideRatio {
  std::string cell, against, what;  // what: "x fp32", "x prev", "top over top-X", "B/A"
  std::string side, against_side;
  double half_width_pct = 0;
};

// The ratios wider than o.target_ci_pct, from the run's rows (with their
// ratios, reports/model/run/ratios.h): the kinds judged in this run (RatioKind::judged):
// in a ladder run each rung's x fp32 and x prev; in an ablation run each
// switch alone on fp32 and at the top; in an A/B run each rung's B over A.
std::vector<WideRatio> wide_ratios(const std::vector<SummaryRow>& rows, const RunnerOptions& o);

// The smallest change this run's noise lets it resolve after `rounds`
// rounds: for each judged ratio with an interval (as wide_ratios picks them,
// wide or not), the change a two-sided 5 % test finds with 80 % power,
// (t_0.975 + t_0.80) s / sqrt(rounds), with s and the degrees of freedom
// projected from its interval now (its half-width, process count and degrees
// of freedom); never less than the 1 % noise threshold below which no verdict
// calls a change. The median over the ratios, and their range.
struct Resolution {
  double change_pct = 0, lo_pct = 0, hi_pct = 0;
  int ratios = 0, rounds = 0;
};
std::optional<Resolution> resolvable_change(const std::vector<SummaryRow>& rows, const RunnerOptions& o, int rounds);
// "with this noise, 8.0 min (about 6 rounds) resolves changes of +-3.1 % or
// more (median of 4 ratios; 2.0-5.2 %)"; `what`: "8.0 min (about 6 rounds)".
std::string resolution_line(const Resolution& r, const std::string& what);
// The summary's resolution section, `line` (resolution_line) included.
ResolutionDoc resolution_doc(const Resolution& r, const std::string& line);

// Round `round`'s jobs: the cells of the wide ratios and the cells they are
// against, once each (per side), in the matrix's order.
std::vector<Job> next_round(const std::vector<Cell>& cells, const std::vector<WideRatio>& wide, int round,
                            const RunnerOptions& o);

// "[auto] round 3: 4 ratio(s) wider than +-2 %: ...; 6.5 of 12.0 min": the
// progress line before a round.
std::string round_line(int round, const std::vector<WideRatio>& wide, double elapsed_s, double budget_s,
                       const RunnerOptions& o);
// The summary's repeat_auto section, and its closing line.
nlohmann::json auto_summary(const std::vector<WideRatio>& wide, int rounds, const std::string& stopped,
                            double budget_s, double elapsed_s, const RunnerOptions& o);
std::string auto_line(const nlohmann::json& repeat_auto);

}  // namespace ladder
