// bench/measure/harness/step_metrics.h: a per-step metric is one declaration.
//
// Each StepMetric names its JSON key with its unit (dt_ms, tokens_per_s,
// peak_rss_bytes), says what it is, how it is collected from the harness's
// StepRecord, and whether report.summary carries its statistics. The rung
// report's per-step columns (step_columns), its summary (summarize_steps)
// a peer's summary (bench/run/peers.cpp) and the ddp section's per-rank figures
// (bench/measure/measure.cpp) and their part of the report's schema
// (bench/measure/report/report_schema.h) all come from the list in step_metrics.cpp:
// a new metric is one entry there, and the monitor that fills its StepRecord
// field.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/measure/harness/harness.h"

namespace ladder {

// What a metric may need besides the step itself.
struct MetricContext {
  int world_size = 1;
  int64_t flops_per_token = 0;  // the model's (bench/measure/roofline/mfu.h); 0 when not known
};

// Where the ddp section of rank 0's report (bench/measure/measure.cpp) keeps a
// metric: not at all; in every rank's figures (ddp.per_rank[].<key>, the
// steps and their median); or there and summarised across the ranks' medians
// too (ddp.across_ranks_of_medians.<key>).
enum class RankScope { kNone, kPerRank, kAcrossRanks };

// The values a metric takes, which the report's schema checks.
enum class Range {
  kAny,
  kNonNegative,
  kPositive,
  kNullable,  // may be NaN, written as null (a diverged loss)
};

struct StepMetric {
  const char* key;   // the JSON key, with its unit
  const char* what;  // one line, for the docs
  bool summarised;   // report.summary.<key>: median, mean, min, max, ...
  bool integer;      // written as an integer (bytes, counts)
  // Whether these steps have it (nullptr: always): the ddp rung's all-reduce,
  // the memory monitor's peaks, CUDA's allocator counts.
  bool (*present)(const StepRecord& first, const MetricContext&);
  double (*collect)(const StepRecord&, const MetricContext&);
  RankScope ranks = RankScope::kNone;  // ddp: per rank, and across the ranks
  Range range = Range::kAny;
};

// In report order.
const std::vector<StepMetric>& step_metrics();

}  // namespace ladder
