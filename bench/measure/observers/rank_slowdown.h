// bench/measure/observers/rank_slowdown.h: test-only, one rank of a ddp job made slow.
//
// LADDER_TEST_SLOW_RANK=K:P makes rank K's compute P % longer inside every
// step after the first: at the end of each forward phase it spins for P % of
// its recent step time (the shortest of its last three steps' host time, its
// own spin left out), shared over the step's forward phases, counted in its
// thread's CPU time: P % more work, which a descheduled moment does not
// shorten as a wall-clock wait would. The other ranks finish their
// backward first and wait for its gradient buckets, as they would for a slow
// GPU or a throttled CPU: the straggler that ddp.slow_rank
// (reports/model/report/slow_rank.h) names. The wait is a range ("test slowdown")
// inside the forward range, so a trace shows it there, and the report
// records the hook (ddp.test_slow_rank).
//
// The harness puts it innermost on its list (harness.h run_measurement), so
// its wait falls inside the phase clock's forward phase; the op breakdown's
// profiled steps run it too. It acts only in a ddp job; ranks other than K
// ignore it. On CUDA the wait delays the host's launches, which slows the
// device only where the host is the bottleneck: it is meant for CPU jobs.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "bench/measure/observers/step_observer.h"

namespace ladder {

inline constexpr const char* kTestSlowRankEnv = "LADDER_TEST_SLOW_RANK";

struct SlowRankSpec {
  int rank = 0;
  double pct = 0;
};

// From the environment: none when unset or empty; ConfigError naming the
// variable, its value and the form expected when malformed, or when K is not
// a rank of a world of `world_size`.
std::optional<SlowRankSpec> test_slow_rank(int world_size);

class RankSlowdown final : public StepObserver {
 public:
  explicit RankSlowdown(double pct) : pct_(pct) {}
  void step_begins(int64_t step) override;
  void phase_ends(Phase p) override;
  void step_ends(int64_t step) override;

 private:
  using Clock = std::chrono::steady_clock;
  double pct_;
  Clock::time_point begin_;
  std::vector<double> recent_ms_;  // the last steps' host time, the spin left out
  int last_forwards_ = 0;          // the previous step's forward phases
  int forwards_ = 0;
  double waited_ms_ = 0;
};

}  // namespace ladder
