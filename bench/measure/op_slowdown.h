// bench/measure/op_slowdown.h: test-only, one operator made slow.
//
// LADDER_TEST_SLOW_OP=NAME:P makes every call of the operator NAME, as the
// profiler names it (aten::gelu, aten::addmm), P % longer in the op
// breakdown's profiled steps: a RecordFunction callback on the thread that
// runs the steps (where a CPU's autograd runs too) notes when a call begins
// and, when it ends, spins for P % of the time the call took. It is added
// just before the profiler's, so it ends first and its spin falls inside the
// call's own time: the operator's family, and its band, grow and nothing
// else does. It is what `ladder compare --kernels` is tested with: the
// family slowed is flagged, in its band only. The warm-up and measured steps
// run without it: a callback active in every step changed the steps it did
// not slow (with one always on, the CPU fp32 rung's log-softmax backward took
// twice its time in the profile, its dt unmoved; 2026-12-02), and their dt is
// untouched. The report records it (op_breakdown.test_slow_op). Meant for
// CPU runs; on CUDA the spin only delays the host's launches.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ladder {

inline constexpr const char* kTestSlowOpEnv = "LADDER_TEST_SLOW_OP";

struct SlowOpSpec {
  std::string op;
  double pct = 0;
  std::string text() const;  // "aten::gelu:50"
};

// From the environment: none when unset or empty; ConfigError naming the
// variable, its value and the form expected when malformed.
std::optional<SlowOpSpec> test_slow_op();

// Slows the operator while it lives.
class OpSlowdown {
 public:
  explicit OpSlowdown(SlowOpSpec spec);
  ~OpSlowdown();
  OpSlowdown(const OpSlowdown&) = delete;
  OpSlowdown& operator=(const OpSlowdown&) = delete;

 private:
  uint64_t handle_ = 0;
};

}  // namespace ladder
