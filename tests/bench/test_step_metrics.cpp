// tests/bench/test_step_metrics.cpp: a per-step metric is one declaration; the
// report's columns and summary are exactly the declared metrics a step has.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "bench/measure/harness/step_columns.h"
#include "bench/measure/harness/step_metrics.h"

namespace ladder {
namespace {

std::vector<StepRecord> two_steps(bool comm) {
  std::vector<StepRecord> steps(2);
  for (int i = 0; i < 2; ++i) {
    auto& s = steps[size_t(i)];
    s.step = i;
    s.dt_ms = 100.0 * (i + 1);
    s.tokens = 1000;
    s.tokens_per_s = 1000.0 / (s.dt_ms * 1e-3);
    s.loss = 5.0;
    s.has_comm = comm;
    s.allreduce_ms = 10;
  }
  return steps;
}

TEST(StepMetrics, KeysAreUniqueAndCarryTheirUnit) {
  std::set<std::string> keys;
  for (const StepMetric& m : step_metrics()) {
    EXPECT_TRUE(keys.insert(m.key).second) << m.key;
    const std::string k = m.key;
    const bool unit = k.find("_ms") != std::string::npos || k.find("_per_s") != std::string::npos ||
                      k.find("_pct") != std::string::npos || k.find("_bytes") != std::string::npos ||
                      k.find("_tflops") != std::string::npos || k == "loss" || k == "grad_norm" || k == "lr" ||
                      k == "allreduce_buckets" || k == "alloc_retries" || k == "ooms";
    EXPECT_TRUE(unit) << k << ": a metric's key names its unit (or is a count or a pure number)";
  }
}

TEST(StepMetrics, ColumnsAndSummaryAreTheDeclaredMetricsPresent) {
  for (bool comm : {false, true}) {
    const auto steps = two_steps(comm);
    const MetricContext ctx{2, 0};
    const nlohmann::json cols = step_columns(steps, ctx);
    const StepSummary summary = summarize_steps(step_columns(steps, ctx));
    for (const StepMetric& m : step_metrics()) {
      const bool present = !m.present || m.present(steps.front(), ctx);
      EXPECT_EQ(cols.contains(m.key), present) << m.key;
      EXPECT_EQ(summary.of(m.key) != nullptr, present && m.summarised) << m.key;
      if (present) {
        EXPECT_DOUBLE_EQ(cols[m.key][1].get<double>(), m.collect(steps[1], ctx)) << m.key;
      }
    }
  }
  const auto steps = two_steps(false);
  EXPECT_DOUBLE_EQ(step_columns(steps, {2, 0}).of("tokens_per_s_per_device")->at(0), 5000.0);
  EXPECT_DOUBLE_EQ(summarize_steps(step_columns(steps, {2, 0})).of("dt_ms")->median, 150.0);
  EXPECT_TRUE(summarize_steps(step_columns(steps, {2, 0})).phase_ms.empty());  // the phases were not timed apart
}

// model_tflops: 1000 tokens x 6e9 FLOPs per token in 100 ms and 200 ms is
// 60 and 30 TFLOP/s; without the FLOPs per token there is no column.
TEST(StepMetrics, ModelTflopsIsTokensTimesFlopsPerTokenOverDt) {
  const auto steps = two_steps(false);
  const nlohmann::json cols = step_columns(steps, {1, 6'000'000'000});
  EXPECT_DOUBLE_EQ(cols["model_tflops"][0].get<double>(), 60.0);
  EXPECT_DOUBLE_EQ(cols["model_tflops"][1].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(summarize_steps(step_columns(steps, {1, 6'000'000'000})).of("model_tflops")->median, 45.0);
  EXPECT_EQ(step_columns(steps, {1, 0}).of("model_tflops"), nullptr);
}

}  // namespace
}  // namespace ladder
