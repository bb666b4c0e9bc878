// bench/measure/observers/op_slowdown.h: test-only, one operator made slow.
//
// LADDER_TEST_SLOW_OP=NAME:P makes every call of the operator NAME, as the
// profiler names it (aten::gelu, aten::addmm), P % longer in the op
// breakdown's profiled steps: a RecordFunction callback on the thread that
// runs the steps (where a CPU's autograd runs too) notes when a call begins
// and, when it ends, spins for P % of the CPU time the call took (its thread's
// CPU time, so a pause of the vCPU inside the call is not multiplied too). It is added
// just before the profiler's, so it ends first and its spin falls inside the
// call's own time: the operator's family, and its band, grow and nothing
// else does. It is what `ladder compare --kernels` is tested with: the
// family slowed is flagged, in its band only. The warm-up and measured steps
// run without it, and their dt is untouched. The report records it
// (op_breakdown.test_slow_op). Meant for CPU runs; on CUDA the spin only
// delays the host's launches.
//
// The slowed process must differ from its unslowed twin in the spin alone.
// A CPU operator's time depends on where its tensors sit in the heap (the
// fp32 rung's log-softmax backward at tiny takes 0.08 or 0.28 ms by the
// layout a process got, 2026-12-02), and a heap allocation that only the
// slowed side makes can move every later tensor. So the callback is added in
// every process, hooked or not, and does nothing unless an operator is
// named; the operator's name sits in a fixed buffer; and neither callback
// allocates (the call's start is a thread-local, not an ObserverContext).
// Before this, an A/B run with aten::gelu slowed on B at times read the
// log-softmax backward 0.22 ms faster on B in every round.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace ladder {

inline constexpr const char* kTestSlowOpEnv = "LADDER_TEST_SLOW_OP";

struct SlowOpSpec {
  std::array<char, 128> op{};  // NUL-terminated; a std::string could allocate
  double pct = 0;
  std::string text() const;  // "aten::gelu:50"
};

// From the environment: none when unset or empty; ConfigError naming the
// variable, its value and the form expected when malformed.
std::optional<SlowOpSpec> test_slow_op();

// Adds the callback while it lives, in every process: it slows the operator
// of `spec`, and does nothing without one.
class OpSlowdown {
 public:
  explicit OpSlowdown(const std::optional<SlowOpSpec>& spec);
  ~OpSlowdown();
  OpSlowdown(const OpSlowdown&) = delete;
  OpSlowdown& operator=(const OpSlowdown&) = delete;

 private:
  uint64_t handle_ = 0;
};

}  // namespace ladder
