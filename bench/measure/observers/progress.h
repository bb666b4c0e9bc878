// bench/measure/observers/progress.h: the live progress line on stderr.
//
// On a terminal one line is rewritten in place each step; otherwise (CI,
// pipes) a line is printed at most every couple of seconds and on the last
// step, so logs stay short but a long run is never silent. It watches the
// harness's steps from its observer list (bench/measure/observers/step_observer.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "bench/measure/observers/step_observer.h"

namespace ladder {

class Progress final : public StepObserver {
 public:
  Progress(std::string label, int64_t warmup, int64_t steps, bool quiet);
  void after_step(StepRecord& rec, bool measured) override { update(rec, !measured); }
  void measurement_ends(int64_t) override { finish(); }
  void update(const StepRecord& rec, bool warmup);
  void finish();

 private:
  std::string label_;
  int64_t warmup_, steps_;
  int64_t warmup_seen_ = 0, measured_seen_ = 0;
  bool quiet_, tty_;
  bool open_line_ = false;
  std::chrono::steady_clock::time_point last_print_;
};

}  // namespace ladder
