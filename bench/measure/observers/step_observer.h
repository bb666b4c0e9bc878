// bench/measure/observers/step_observer.h: what watches the harness's steps, on one list.
//
// The profiler, the progress line, the memory monitor, the clock of the ddp
// rung's all-reduce, the phase timer, where-a-failure-happened and the test
// fault hooks are each a StepObserver; the harness holds one list of them
// (StepObservers) and calls it at fixed points of every step it runs. The
// step itself announces only its phases (variants/step/phases.h); the list hears
// them and passes them on, so the step never knows who listens.
//
// Observers nest like scopes: the first on the list is the innermost, closest
// to the step. What opens (before_step, step_begins, phase_begins) is called
// outermost first, what closes (phase_ends, step_ends, after_step) innermost
// first. So the memory monitor (inner) resets its peaks after a profiler
// (outer) has started, and reads them before the profiler writes its trace.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/measure/observers/step_record.h"
#include "variants/step/phases.h"

namespace ladder {

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  // Warm-up is over (the device is synchronised); measured steps follow.
  virtual void measurement_begins() {}
  // Outside the timed region: `measured` is false for warm-up and extra steps.
  virtual void before_step(int64_t step, bool measured) {}
  // Inside it: first and last (the device may still run); keep them cheap.
  virtual void step_begins(int64_t step) {}
  virtual void step_ends(int64_t step) {}
  // Inside it: the step's phases, as the step announces them.
  virtual void phase_begins(Phase) {}
  virtual void phase_ends(Phase) {}
  // Outside it, the step's device work done: its record, which an observer
  // may fill in (memory peaks, communication, phase times).
  virtual void after_step(StepRecord& rec, bool measured) {}
  // After the last measured step (before any extra steps).
  virtual void measurement_ends(int64_t last_step) {}
};

// The list, innermost first. It is the PhaseObserver the step is run with.
class StepObservers final : public PhaseObserver {
 public:
  StepObservers() = default;
  explicit StepObservers(std::vector<StepObserver*> inner_first) : list_(std::move(inner_first)) {}
  void add_outer(StepObserver& o) { list_.push_back(&o); }

  void measurement_begins();
  void before_step(int64_t step, bool measured);
  void step_begins(int64_t step);
  void step_ends(int64_t step);
  void after_step(StepRecord& rec, bool measured);
  void measurement_ends(int64_t last_step);
  void begin(Phase p) override;  // PhaseObserver: the step's phases
  void end(Phase p) override;

 private:
  std::vector<StepObserver*> list_;
};

}  // namespace ladder
