// bench/harness.cpp: warmup, timed loop, breakdown and memory (see harness.h).
#include "bench/harness.h"

#include <chrono>

#include "profiler/range.h"

namespace ladder {

namespace {
using Clock = std::chrono::steady_clock;

// Records the current phase; with `timed`, also synchronises the device at
// phase boundaries and times each phase.
class PhaseClock final : public PhaseObserver {
 public:
  PhaseClock(const torch::Device& device, bool timed, Position* position)
      : device_(device), timed_(timed), position_(position) {}
  void begin(Phase p) override {
    if (position_) position_->phase = phase_name(p);
    if (!timed_) return;
    synchronize(device_);
    t0_ = Clock::now();
  }
  void end(Phase p) override {
    if (!timed_) return;
    synchronize(device_);
    ms_[size_t(p)] += std::chrono::duration<double, std::milli>(Clock::now() - t0_).count();
  }
  std::array<double, 4> take() {
    auto out = ms_;
    ms_ = {};
    return out;
  }

 private:
  torch::Device device_;
  bool timed_;
  Position* position_;
  Clock::time_point t0_;
  std::array<double, 4> ms_{};
};

// One step between the timer's start and stop; `hooks` may be null.
StepRecord timed_step(TrainStep& step, int64_t i, StepTimer& timer, PhaseObserver& observer,
                      profiler::StepHooks* hooks) {
  timer.start();
  if (hooks) hooks->step_begins(i);
  StepOutput out = step.run(i, observer);
  if (hooks) hooks->step_ends(i);
  timer.stop();
  StepRecord rec;
  rec.step = i;
  rec.dt_ms = timer.elapsed_ms();  // waits for the device
  rec.tokens = out.tokens;
  rec.tokens_per_s = double(out.tokens) / (rec.dt_ms * 1e-3);
  rec.loss = out.loss.item<double>();
  rec.grad_norm = out.grad_norm.item<double>();
  rec.lr = out.lr;
  return rec;
}
}  // namespace

HarnessResult run_measurement(TrainStep& step, const RunConfig& cfg, const torch::Device& device,
                              const StepCallback& on_step, Position* position, profiler::StepHooks* hooks) {
  HarnessResult r;
  auto timer = make_step_timer(device);
  r.timer_method = timer->method();
  r.timing_mode = cfg.breakdown ? "phase_synchronized" : "end_to_end";
  PhaseClock phase_clock(device, cfg.breakdown, position);
  MemoryMonitor* monitor = nullptr;  // measured steps only

  auto one_step = [&](int64_t i) {
    if (position) position->step = i;
    if (hooks) hooks->before_step(i);
    if (monitor) monitor->before_step();
    StepRecord rec = timed_step(step, i, *timer, phase_clock, hooks);
    if (monitor) {
      rec.has_memory = true;
      rec.memory = monitor->after_step();
    }
    if (cfg.breakdown) {
      rec.has_phases = true;
      rec.phase_ms = phase_clock.take();
    }
    if (hooks) hooks->after_step(i);
    return rec;
  };

  for (int64_t i = 0; i < cfg.warmup; ++i) {
    r.warmup_steps.push_back(one_step(i));
    on_step(r.warmup_steps.back(), true);
  }
  MemoryMonitor memory(device);  // synchronises, empties the cache, resets peaks
  monitor = &memory;
  r.steps.reserve(size_t(cfg.steps));
  const auto wall0 = Clock::now();
  {
    profiler::ScopedRange range(profiler::names::kMeasuredSteps);
    for (int64_t i = cfg.warmup; i < cfg.total_steps(); ++i) {
      r.steps.push_back(one_step(i));
      on_step(r.steps.back(), false);
    }
    synchronize(device);
  }
  r.measured_wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - wall0).count();
  r.memory = memory.totals();
  double sum_dt = 0;
  for (const auto& s : r.steps) sum_dt += s.dt_ms;
  r.harness_overhead_ms_per_step = (r.measured_wall_ms - sum_dt) / double(r.steps.size());
  if (position) position->phase = "after measurement";
  return r;
}

std::vector<StepRecord> run_extra_steps(TrainStep& step, const torch::Device& device, int64_t first, int64_t n,
                                        profiler::StepHooks& hooks, PhaseObserver& observer) {
  auto timer = make_step_timer(device);
  std::vector<StepRecord> records;
  for (int64_t i = first; i < first + n; ++i) {
    hooks.before_step(i);
    records.push_back(timed_step(step, i, *timer, observer, &hooks));
    hooks.after_step(i);
  }
  return records;
}

}  // namespace ladder
