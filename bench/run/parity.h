// bench/run/parity.h: the loss-parity verdict of a cell of the matrix.
//
// A rung is correct before it is fast: its first --parity-steps losses and
// gradient norms are compared with its reference cell's (the fp32 baseline,
// or one step of the whole batch for grad-accum), within the tolerance of the
// precision the subject really ran in (variants/config/rungs.h: parity_rtol). The
// verdict goes into the cell's report and its summary row.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/run/matrix.h"
#include "bench/run/runner_options.h"
#include "reports/model/report/rung_report.h"

namespace ladder {

// Compares the subject's first losses and gradient norms with the
// reference's. Early losses sit near ln V whatever the model does, so the
// gradient norm, which reacts to any change in the maths, is checked too.
// Returns the report's parity section (reports/model/report/rung_report.h Parity:
// status baseline|not_checked|unavailable|pass|fail, class, rtol, reference,
// subject, ...), reading both cells' repeat-1 reports from the run directory.
// On a side of an A/B run, both reports are that side's.
Parity check_parity(const Cell& cell, const std::map<std::string, const Cell*>& by_id, const RunnerOptions& o,
                    const std::string& side = "");

}  // namespace ladder
