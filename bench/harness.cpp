// bench/harness.cpp: warmup, timed loop, breakdown and memory (see harness.h).
#include "bench/harness.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

namespace ladder {

namespace {
using Clock = std::chrono::steady_clock;

// The ddp rung's all-reduce of one step: when each bucket was launched and
// done, and when backward's compute ended. comm_done comes from the
// communication thread, hence the lock.
class CommClock {
 public:
  void reset() {
    std::lock_guard<std::mutex> g(mu_);
    launched_.clear();
    done_.clear();
    bytes_ = 0;
    wait_begin_.reset();
  }
  void launched(int bucket, int64_t bytes) {
    std::lock_guard<std::mutex> g(mu_);
    if (size_t(bucket) >= launched_.size()) launched_.resize(size_t(bucket) + 1);
    launched_[size_t(bucket)] = Clock::now();
    bytes_ += bytes;
  }
  void done(int bucket) {
    {
      std::lock_guard<std::mutex> g(mu_);
      done_.emplace_back(bucket, Clock::now());
    }
    cv_.notify_all();
  }
  void wait_begin() {
    std::lock_guard<std::mutex> g(mu_);
    wait_begin_ = Clock::now();
  }
  // Fills rec's comm fields. A future's callbacks may run just after its
  // wait() returned, so give the last ones a moment to land.
  void take(StepRecord& rec) {
    std::unique_lock<std::mutex> lk(mu_);
    if (launched_.empty()) return;
    cv_.wait_for(lk, std::chrono::milliseconds(200), [&] { return done_.size() >= launched_.size(); });
    std::vector<std::pair<Clock::time_point, Clock::time_point>> spans;  // (launch, done), by launch
    for (const auto& [bucket, t] : done_) spans.emplace_back(launched_[size_t(bucket)], t);
    std::sort(spans.begin(), spans.end());
    const Clock::time_point compute_end = wait_begin_.value_or(spans.empty() ? Clock::now() : spans.back().second);
    auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
    double busy = 0, hidden = 0;
    Clock::time_point last_end = Clock::time_point::min();
    for (size_t i = 0; i < spans.size();) {  // merge overlapping spans
      Clock::time_point a = spans[i].first, b = spans[i].second;
      for (++i; i < spans.size() && spans[i].first <= b; ++i) b = std::max(b, spans[i].second);
      busy += ms(b - a);
      if (compute_end > a) hidden += ms(std::min(b, compute_end) - a);
      last_end = std::max(last_end, b);
    }
    rec.has_comm = true;
    rec.buckets = int(launched_.size());
    rec.allreduce_bytes = bytes_;
    rec.allreduce_ms = busy;
    rec.allreduce_exposed_ms = last_end > compute_end ? ms(last_end - compute_end) : 0.0;
    rec.overlap_pct = busy > 0 ? 100.0 * hidden / busy : 0.0;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Clock::time_point> launched_;
  std::vector<std::pair<int, Clock::time_point>> done_;
  int64_t bytes_ = 0;
  std::optional<Clock::time_point> wait_begin_;
};

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
  void comm_launched(int bucket, int64_t bytes) override { comm.launched(bucket, bytes); }
  void comm_done(int bucket) override { comm.done(bucket); }
  void comm_wait_begin() override { comm.wait_begin(); }
  CommClock comm;
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
    phase_clock.comm.reset();
    timer->start();
    StepOutput out = step.run(i, phase_clock);
    timer->stop();
    StepRecord rec;
    rec.step = i;
    rec.dt_ms = timer->elapsed_ms();  // waits for the device
    phase_clock.comm.take(rec);
    step.reduce_for_report(out);  // the mean loss over ranks, outside the timed step
    rec.tokens = out.tokens * cfg.world_size;  // the whole job's tokens
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
