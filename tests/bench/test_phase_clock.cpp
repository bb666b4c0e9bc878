// tests/bench/test_phase_clock.cpp: the harness times every phase of every step
// without synchronising (bench/measure/harness/harness.cpp PhaseClock), and on a CPU
// reads each phase's CPU time; the slow-rank verdict's samples
// (reports/model/report/slow_rank.h) come from these.
#include <numeric>

#include <gtest/gtest.h>

#include "bench/measure/harness/harness.h"
#include "bench/run/matrix.h"
#include "variants/data/data_source.h"
#include "variants/step/step.h"

namespace ladder {
namespace {

RunConfig tiny(bool breakdown) {
  RunConfig c = config_for("tiny", Overrides{}, "cpu");
  c.warmup = 1;
  c.steps = 3;
  c.threads = 1;
  c.breakdown = breakdown;
  return c;
}

TEST(PhaseClock, EveryPhaseOfEveryStepLiesInsideTheStepWithNothingSynchronised) {
  for (bool breakdown : {false, true}) {
    const RunConfig c = tiny(breakdown);
    TrainStep step(c, torch::kCPU, make_token_source(c, torch::kCPU));
    const HarnessResult r = run_measurement(step, c, torch::kCPU);
    EXPECT_EQ(r.timing_mode, breakdown ? "phase_synchronized" : "end_to_end");
    ASSERT_EQ(r.steps.size(), size_t(c.steps));
    for (const StepRecord& s : r.steps) {
      ASSERT_TRUE(s.has_phases) << "step " << s.step;
      ASSERT_TRUE(s.has_phase_cpu) << "step " << s.step;
      for (Phase p : {Phase::kForward, Phase::kBackward, Phase::kOptimizer}) {
        EXPECT_GT(s.phase_ms[size_t(p)], 0) << phase_name(p) << " of step " << s.step;
        EXPECT_GT(s.phase_cpu_ms[size_t(p)], 0) << phase_name(p) << " of step " << s.step;
      }
      const double sum = std::accumulate(s.phase_ms.begin(), s.phase_ms.end(), 0.0);
      EXPECT_LE(sum, s.dt_ms) << "the phases lie inside the timed step (step " << s.step << ")";
      EXPECT_EQ(s.wait_cpu_ms, 0) << "one process: no all-reduce to wait for";
      // Without a gradient sync nothing is taken out: the compute phases are the phases.
      EXPECT_EQ(compute_phase_ms(s), s.phase_ms);
      EXPECT_EQ(comm_wait_ms(s), 0);
    }
  }
}

TEST(PhaseClock, TheCommunicationWaitComesOutOfTheBackwardAndOptimizerPhases) {
  StepRecord s;
  s.phase_ms = {1, 10, 20, 5};
  s.has_comm = true;
  s.allreduce_exposed_ms = 7;
  s.has_gather = true;
  s.gather_ms = 2;
  EXPECT_EQ(compute_phase_ms(s), (std::array<double, 4>{1, 10, 13, 3}));
  EXPECT_EQ(comm_wait_ms(s), 9);
  s.allreduce_exposed_ms = 30;  // a wait the clock read longer than the phase: never below 0
  EXPECT_EQ(compute_phase_ms(s)[size_t(Phase::kBackward)], 0);
}

}  // namespace
}  // namespace ladder
