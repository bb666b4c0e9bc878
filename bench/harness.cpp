// bench/harness.cpp: warmup, timed loop, breakdown and memory (see harness.h).
#include "bench/harness.h"

#include <chrono>

namespace ladder {

namespace {
using Clock = std::chrono::steady_clock;

// Records the current phase and times the data phase on the host; with
// `timed`, also synchronises the device at phase boundaries and times each
// phase. The data phase's host time excludes those synchronisations.
class PhaseClock final : public PhaseObserver {
 public:
  PhaseClock(const torch::Device& device, bool timed, Position* position)
      : device_(device), timed_(timed), position_(position) {}
  void begin(Phase p) override {
    if (position_) position_->phase = phase_name(p);
    if (timed_) synchronize(device_);
    t0_ = Clock::now();
  }
  void end(Phase p) override {
    const auto t1 = Clock::now();
    if (p == Phase::kData) data_ms_ += ms(t1 - t0_);
    if (!timed_) return;
    synchronize(device_);
    ms_[size_t(p)] += ms(Clock::now() - t0_);
  }
  std::array<double, 4> take_phases() {
    auto out = ms_;
    ms_ = {};
    return out;
  }
  double take_data_ms() {
    const double out = data_ms_;
    data_ms_ = 0;
    return out;
  }

 private:
  static double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
  torch::Device device_;
  bool timed_;
  Position* position_;
  Clock::time_point t0_;
  std::array<double, 4> ms_{};
  double data_ms_ = 0;
};
}  // namespace

HarnessResult run_measurement(TrainStep& step, const RunConfig& cfg, const torch::Device& device,
                              const StepCallback& on_step, Position* position) {
  HarnessResult r;
  auto timer = make_step_timer(device);
  r.timer_method = timer->method();
  r.timing_mode = cfg.breakdown ? "phase_synchronized" : "end_to_end";
  PhaseClock phase_clock(device, cfg.breakdown, position);

  auto one_step = [&](int64_t i) {
    if (position) position->step = i;
    timer->start();
    StepOutput out = step.run(i, phase_clock);
    timer->stop();
    StepRecord rec;
    rec.step = i;
    rec.dt_ms = timer->elapsed_ms();  // waits for the device
    rec.tokens = out.tokens;
    rec.tokens_per_s = double(out.tokens) / (rec.dt_ms * 1e-3);
    rec.loss = out.loss.item<double>();
    rec.grad_norm = out.grad_norm.item<double>();
    rec.lr = out.lr;
    rec.data_ms = phase_clock.take_data_ms();
    if (cfg.breakdown) {
      rec.has_phases = true;
      rec.phase_ms = phase_clock.take_phases();
    }
    return rec;
  };

  for (int64_t i = 0; i < cfg.warmup; ++i) {
    r.warmup_steps.push_back(one_step(i));
    on_step(r.warmup_steps.back(), true);
  }
  synchronize(device);
  const bool rss_reset = reset_memory_peaks(device);
  r.steps.reserve(size_t(cfg.steps));
  const auto wall0 = Clock::now();
  for (int64_t i = cfg.warmup; i < cfg.total_steps(); ++i) {
    r.steps.push_back(one_step(i));
    on_step(r.steps.back(), false);
  }
  synchronize(device);
  r.measured_wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - wall0).count();
  r.memory = read_memory(device);
  r.memory.peak_rss_reset = rss_reset;
  double sum_dt = 0;
  for (const auto& s : r.steps) sum_dt += s.dt_ms;
  r.harness_overhead_ms_per_step = (r.measured_wall_ms - sum_dt) / double(r.steps.size());
  if (position) position->phase = "after measurement";
  return r;
}

}  // namespace ladder
