// profiler/step_hooks.h: how a profiler follows the harness's step loop.
//
// The harness (bench/harness.cpp) calls these around every step it runs, in
// this order. Only step_begins and step_ends run inside the timed region, so
// they must be cheap (open and close a range); starting, stopping and writing
// a trace happen in before_step and after_step, outside it. When no profiler
// is attached the harness holds a null pointer: nothing runs at all.
#pragma once

#include <cstdint>

namespace ladder::profiler {

class StepHooks {
 public:
  virtual ~StepHooks() = default;
  virtual void before_step(int64_t step) {}  // outside the timed region
  virtual void step_begins(int64_t step) {}  // first thing inside it
  virtual void step_ends(int64_t step) {}    // last thing inside it (the device may still run)
  virtual void after_step(int64_t step) {}   // outside it; the step's device work has finished
};

}  // namespace ladder::profiler
