// bench/measure/harness/step_columns.h: the harness's step records as a rung report's
// per-step columns (reports/model/report/report.h), and their summary statistics.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "bench/measure/harness/harness.h"
#include "bench/measure/harness/step_metrics.h"
#include "reports/model/report/rung_report.h"  // StepColumns, StepSummary

namespace ladder {

// The per-step columns: step, dt_ms, tokens_per_s, loss, grad_norm, lr,
// data_ms (host time in the data phase); in breakdown mode
// phase_ms.{data,forward,backward,optimizer}; for measured steps the memory
// monitor's peak_rss_bytes and, on CUDA, peak_active_bytes,
// peak_reserved_bytes, peak_allocated_bytes, alloc_retries and ooms; for the
// ddp rung allreduce_{ms,exposed_ms,overlap_pct,pct_of_dt,bytes,buckets}.
// Every declared metric (bench/measure/harness/step_metrics.h) these steps have, as a column.
StepColumns step_columns(const std::vector<StepRecord>& steps, const MetricContext& ctx = {});

// Summary statistics of the columns of every summarised metric, and of the phases.
StepSummary summarize_steps(const StepColumns& steps);

}  // namespace ladder
