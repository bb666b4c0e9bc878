// bench/measure/harness/harness.cpp: warm-up, the timed loop, and the harness's own observers
// (see harness.h): the phase clock and the clock of the ddp rung's all-reduce.
#include "bench/measure/harness/harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "bench/measure/observers/noise_monitor.h"
#include "bench/measure/observers/speed_probe.h"
#include "profiler/ranges/range.h"
#include "variants/ddp/comm_observer.h"

namespace ladder {

namespace {
using Clock = std::chrono::steady_clock;
double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The process's CPU time, all its threads, in ms.
double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

// The ddp rung's all-reduce of one step: when each bucket was launched and
// done, and when backward's compute ended; into the step's record after it.
// done() comes from the communication thread, hence the lock.
class CommClock final : public CommObserver, public StepObserver {
 public:
  void launched(int bucket, int64_t bytes) override {
    std::lock_guard<std::mutex> g(mu_);
    if (size_t(bucket) >= launched_.size()) launched_.resize(size_t(bucket) + 1);
    launched_[size_t(bucket)] = Clock::now();
    bytes_ += bytes;
  }
  void done(int bucket) override {
    {
      std::lock_guard<std::mutex> g(mu_);
      done_.emplace_back(bucket, Clock::now());
    }
    cv_.notify_all();
  }
  void wait_begins() override {
    std::lock_guard<std::mutex> g(mu_);
    wait_begin_ = Clock::now();
    wait_cpu_begin_ = process_cpu_ms();
  }
  // The process's CPU time when this step's wait began, once (the phase
  // clock's, at the end of backward); none where it has not begun.
  std::optional<double> take_wait_cpu_begin() {
    std::lock_guard<std::mutex> g(mu_);
    std::optional<double> out = wait_cpu_begin_;
    wait_cpu_begin_.reset();
    return out;
  }
  void device_timing(std::function<std::pair<double, double>()> read) override {
    std::lock_guard<std::mutex> g(mu_);
    device_read_ = std::move(read);
  }
  void gathered(int64_t bytes, double host_ms) override {
    std::lock_guard<std::mutex> g(mu_);
    gather_bytes_ += bytes;
    gather_ms_ += host_ms;
    gathers_ += 1;
  }
  void before_step(int64_t, bool) override {
    std::lock_guard<std::mutex> g(mu_);
    gather_bytes_ = 0;
    gather_ms_ = 0;
    gathers_ = 0;
    launched_.clear();
    done_.clear();
    bytes_ = 0;
    wait_begin_.reset();
    wait_cpu_begin_.reset();
    device_read_ = nullptr;
  }
  void after_step(StepRecord& rec, bool) override;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Clock::time_point> launched_;
  std::vector<std::pair<int, Clock::time_point>> done_;
  int64_t bytes_ = 0;
  int gathers_ = 0;
  int64_t gather_bytes_ = 0;
  double gather_ms_ = 0;
  std::optional<Clock::time_point> wait_begin_;
  std::optional<double> wait_cpu_begin_;
  std::function<std::pair<double, double>()> device_read_;
};

// Fills rec's comm fields. A future's callbacks may run just after its
// wait() returned, so give the last ones a moment to land.
void CommClock::after_step(StepRecord& rec, bool) {
  std::unique_lock<std::mutex> lk(mu_);
  if (gathers_ > 0) {
    rec.has_gather = true;
    rec.gather_bytes = gather_bytes_;
    rec.gather_ms = gather_ms_;
  }
  if (launched_.empty()) return;
  cv_.wait_for(lk, std::chrono::milliseconds(200), [&] { return done_.size() >= launched_.size(); });
  std::vector<std::pair<Clock::time_point, Clock::time_point>> spans;  // (launch, done), by launch
  for (const auto& [bucket, t] : done_) spans.emplace_back(launched_[size_t(bucket)], t);
  std::sort(spans.begin(), spans.end());
  const Clock::time_point compute_end = wait_begin_.value_or(spans.empty() ? Clock::now() : spans.back().second);
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
  if (device_read_) {  // NCCL: the device's figures replace the host clock's
    const auto [device_busy, exposed] = device_read_();
    rec.allreduce_ms = device_busy;
    rec.allreduce_exposed_ms = exposed;
    rec.overlap_pct = device_busy > 0 ? std::clamp(100.0 * (device_busy - exposed) / device_busy, 0.0, 100.0) : 0.0;
  }
}

// Times every phase of every step. The data phase's host time is data_ms.
// Without `synchronised` each phase is timed by a step timer of the device
// (CUDA events recorded at its boundaries on the current stream, the host
// clock on a CPU) and read after the step, once the step's own timer has
// waited for the device: nothing synchronises inside the step. With it
// (breakdown mode) the device is synchronised at every phase boundary and
// the host clock times each phase; the data phase's host time excludes
// those synchronisations. On a CPU it also reads the process's CPU time in
// each phase: a rank's own work where the ranks of a host share its cores
// (ddp.per_rank[].cpu_phases_ms); the ddp rung's wait for its all-reduce
// (from `comm`'s wait_begins to the end of backward), whose threads burn CPU
// too, is kept apart (wait_cpu_ms).
class PhaseClock final : public StepObserver {
 public:
  PhaseClock(const torch::Device& device, bool synchronised, CommClock& comm)
      : device_(device), synchronised_(synchronised), comm_(comm) {}
  void phase_begins(Phase p) override {
    if (synchronised_) synchronize(device_);
    t0_ = Clock::now();
    if (device_.is_cpu()) cpu0_ = process_cpu_ms();
    if (synchronised_) return;
    if (open_ == timers_.size()) timers_.push_back(make_step_timer(device_));
    of_.resize(open_ + 1);
    of_[open_] = p;
    timers_[open_]->start();
  }
  void phase_ends(Phase p) override {
    const auto t1 = Clock::now();
    if (device_.is_cpu()) {
      const double now = process_cpu_ms();
      const auto wait = p == Phase::kBackward ? comm_.take_wait_cpu_begin() : std::nullopt;
      phase_cpu_ms_[size_t(p)] += (wait ? *wait : now) - cpu0_;
      if (wait) wait_cpu_ms_ += now - *wait;
    }
    if (p == Phase::kData) data_ms_ += ms(t1 - t0_);
    if (!synchronised_) {
      timers_[open_++]->stop();
      return;
    }
    synchronize(device_);
    phase_ms_[size_t(p)] += ms(Clock::now() - t0_);
  }
  void after_step(StepRecord& rec, bool) override {
    for (size_t i = 0; i < open_; ++i) phase_ms_[size_t(of_[i])] += timers_[i]->elapsed_ms();
    rec.data_ms = data_ms_;
    rec.has_phases = true;
    rec.phase_ms = phase_ms_;
    rec.has_phase_cpu = device_.is_cpu();
    rec.phase_cpu_ms = phase_cpu_ms_;
    rec.wait_cpu_ms = wait_cpu_ms_;
    wait_cpu_ms_ = 0;
    data_ms_ = 0;
    phase_ms_ = {};
    phase_cpu_ms_ = {};
    open_ = 0;
  }

 private:
  torch::Device device_;
  bool synchronised_;
  Clock::time_point t0_;
  std::array<double, 4> phase_ms_{};
  double data_ms_ = 0;
  CommClock& comm_;
  double cpu0_ = 0, wait_cpu_ms_ = 0;
  std::array<double, 4> phase_cpu_ms_{};
  // The step's phases so far, in order, each with its timer (reused by later steps).
  std::vector<std::unique_ptr<StepTimer>> timers_;
  std::vector<Phase> of_;
  size_t open_ = 0;
};

// One step between the timer's start and stop, announced to `list`.
// `slowdown_pct` (test-only) makes the step wait that share of its own host
// time more before the timer stops.
StepRecord timed_step(TrainStep& step, int64_t i, StepTimer& timer, StepObservers& list, CommObserver* comm,
                      bool measured, double slowdown_pct = 0) {
  list.before_step(i, measured);
  const auto host0 = Clock::now();
  timer.start();
  list.step_begins(i);
  StepOutput out = step.run(i, list, comm);
  list.step_ends(i);
  if (slowdown_pct > 0) {  // a busy wait: a sleep lets the core idle and clock down, slowing the next step too
    const auto until = Clock::now() + (Clock::now() - host0) * (slowdown_pct / 100.0);
    while (Clock::now() < until) {
    }
  }
  timer.stop();
  StepRecord rec;
  rec.step = i;
  rec.dt_ms = timer.elapsed_ms();  // waits for the device
  step.reduce_for_report(out);      // the mean loss over ranks, outside the timed step
  rec.tokens = out.tokens * step.world_size();  // the whole job's tokens
  rec.tokens_per_s = double(rec.tokens) / (rec.dt_ms * 1e-3);
  rec.loss = out.loss.item<double>();
  rec.grad_norm = out.grad_norm.item<double>();
  rec.lr = out.lr;
  list.after_step(rec, measured);
  return rec;
}
}  // namespace

bool warmup_is_stable(const std::vector<StepRecord>& warmup_steps, double tolerance_pct) {
  if (warmup_steps.size() < size_t(kWarmupWindow)) return false;
  double lo = INFINITY, hi = 0;
  for (size_t i = warmup_steps.size() - size_t(kWarmupWindow); i < warmup_steps.size(); ++i) {
    lo = std::min(lo, warmup_steps[i].dt_ms);
    hi = std::max(hi, warmup_steps[i].dt_ms);
  }
  return lo > 0 && (hi - lo) / lo * 100.0 <= tolerance_pct;
}

bool warmup_done(const std::vector<StepRecord>& warm, const RunConfig& cfg, std::string* why) {
  const auto n = int64_t(warm.size());
  const char* reason = nullptr;
  if (n < cfg.warmup) return false;
  if (!cfg.warmup_until_stable()) reason = "fixed";
  else if (warmup_is_stable(warm, cfg.warmup_tolerance_pct)) reason = "stable";
  else if (n >= cfg.warmup_max) reason = "cap";
  if (reason && why) *why = reason;
  return reason != nullptr;
}

TestSlowdown test_slowdown() {
  const char* v = std::getenv(kTestSlowdownEnv);
  TestSlowdown t;
  if (!v || !*v) return t;
  const std::string spec = v;
  auto bad = [&] {
    return ConfigError(fmt::format("{}: got '{}', expected P, P@CELL or P@CELL@ROUND with P a percentage in "
                                   "[0, 1000] and ROUND a round from 1 (e.g. 300@peer:eager@1)",
                                   kTestSlowdownEnv, spec));
  };
  const size_t at = spec.find('@');
  char* end = nullptr;
  const std::string pct = spec.substr(0, at);
  t.pct = std::strtod(pct.c_str(), &end);
  if (pct.empty() || *end != '\0' || !(t.pct >= 0 && t.pct <= 1000)) throw bad();
  if (at == std::string::npos) return t;
  const std::string target = spec.substr(at + 1);
  const size_t round_at = target.find('@');
  t.cell = target.substr(0, round_at);
  if (t.cell.empty()) throw bad();
  if (round_at != std::string::npos) {
    const std::string round = target.substr(round_at + 1);
    const long r = std::strtol(round.c_str(), &end, 10);
    if (round.empty() || *end != '\0' || r < 1 || r > 100000) throw bad();
    t.round = int(r);
  }
  return t;
}

double test_slowdown_pct() {
  const TestSlowdown t = test_slowdown();
  if (!t.cell.empty())
    throw ConfigError(fmt::format("{}={}@{}: a slowdown aimed at a cell is for `ladder run`, which passes {} to "
                                  "that cell's process alone; `ladder measure` takes a plain percentage",
                                  kTestSlowdownEnv, t.pct, t.cell, t.pct));
  return t.pct;
}

HarnessResult run_measurement(TrainStep& step, const RunConfig& cfg, const torch::Device& device,
                              const std::vector<StepObserver*>& watchers, const std::vector<StepObserver*>& inner) {
  HarnessResult r;
  r.test_slowdown_pct = test_slowdown_pct();
  auto timer = make_step_timer(device);
  r.timer_method = timer->method();
  r.timing_mode = cfg.breakdown ? "phase_synchronized" : "end_to_end";
  CommClock comm;
  PhaseClock phases(device, cfg.breakdown, comm);
  MemoryMonitor memory(device);  // measured steps only
  NoiseMonitor noise(device, cfg.threads > 0 ? cfg.threads : at::get_num_threads());
  std::vector<StepObserver*> own = inner;
  own.insert(own.end(), {&phases, &comm, &memory, &noise});
  StepObservers list(own);
  for (StepObserver* w : watchers) list.add_outer(*w);

  // The machine's speed just before the measured steps and after them
  // (bench/measure/observers/speed_probe.h). On a CPU after the warm-up, its threads as hot as
  // the steps': probed before it, a short GEMM at a process's start read up
  // to 8x slow on a busy 2-core VM while its steps did not. On CUDA before
  // the warm-up, so that its memory leaves the allocator's cache with the
  // rest and no measured step's peak holds it.
  SpeedProbeRun probe(device, step.matmuls_in_bf16(), *timer);
  if (device.is_cuda()) probe.before();
  release_cached_memory(device);  // a clean slate the warm-up steps fill again
  int64_t i = 0;
  while (!warmup_done(r.warmup_steps, cfg, &r.warmup_stopped))
    r.warmup_steps.push_back(timed_step(step, i++, *timer, list, &comm, /*measured=*/false));
  synchronize(device);
  if (!device.is_cuda()) probe.before();
  list.measurement_begins();  // the memory monitor resets its peaks, keeping the warm cache
  r.steps.reserve(size_t(cfg.steps));
  const auto wall0 = Clock::now();
  const double steal0 = host_steal_ms();
  {
    profiler::ScopedRange range(profiler::names::kMeasuredSteps);
    for (int64_t k = 0; k < cfg.steps; ++k)
      r.steps.push_back(timed_step(step, i++, *timer, list, &comm, /*measured=*/true, r.test_slowdown_pct));
    synchronize(device);
  }
  r.measured_wall_ms = ms(Clock::now() - wall0);
  const double steal1 = host_steal_ms();
  r.host_steal_ms = steal0 >= 0 && steal1 >= 0 ? steal1 - steal0 : -1;
  r.next_step = i;
  r.memory = memory.totals();
  double sum_dt = 0;
  for (const auto& s : r.steps) sum_dt += s.dt_ms;
  r.harness_overhead_ms_per_step = (r.measured_wall_ms - sum_dt) / double(r.steps.size());
  list.measurement_ends(i - 1);
  probe.after();
  r.noise = noise.section();
  r.noise->probe = probe.section();
  return r;
}

std::vector<StepRecord> run_extra_steps(TrainStep& step, const torch::Device& device, int64_t first, int64_t n,
                                        const std::vector<StepObserver*>& watchers) {
  auto timer = make_step_timer(device);
  StepObservers list(watchers);
  std::vector<StepRecord> records;
  for (int64_t i = first; i < first + n; ++i)
    records.push_back(timed_step(step, i, *timer, list, /*comm=*/nullptr, /*measured=*/false));
  return records;
}

}  // namespace ladder
