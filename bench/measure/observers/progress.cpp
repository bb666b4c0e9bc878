// bench/measure/observers/progress.cpp: see progress.h.
#include "bench/measure/observers/progress.h"

#include <algorithm>

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace ladder {

Progress::Progress(std::string label, int64_t warmup, int64_t steps, bool quiet)
    : label_(std::move(label)), warmup_(warmup), steps_(steps), quiet_(quiet),
      tty_(isatty(STDERR_FILENO) != 0), last_print_(std::chrono::steady_clock::now()) {}

void Progress::update(const StepRecord& rec, bool warmup) {
  if (quiet_) return;
  // Warm-up may run past its minimum (until stable): count what was seen.
  ++(warmup ? warmup_seen_ : measured_seen_);
  const int64_t total = std::max(warmup_, warmup_seen_) + steps_;
  const bool last = !warmup && measured_seen_ == steps_;
  const auto now = std::chrono::steady_clock::now();
  if (!tty_ && !last && now - last_print_ < std::chrono::seconds(2)) return;
  last_print_ = now;
  const std::string line =
      fmt::format("[{}] step {:>4}/{} {:<8}| dt {:9.2f} ms | {:>10.0f} tok/s | loss {:.4f}", label_,
                  rec.step + 1, total, warmup ? "(warmup)" : "", rec.dt_ms, rec.tokens_per_s,
                  rec.loss);
  if (tty_) {
    fmt::print(stderr, "\r\033[2K{}", line);
    open_line_ = true;
  } else {
    fmt::print(stderr, "{}\n", line);
  }
  std::fflush(stderr);
}

void Progress::finish() {
  if (open_line_) fmt::print(stderr, "\n");
  open_line_ = false;
}

}  // namespace ladder
