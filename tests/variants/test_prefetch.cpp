// tests/variants/test_prefetch.cpp: the background producer overlaps the step's
// compute, shown by the order of events, never by time: with prefetch, batch
// N+1 is made while step N is still computing (its optimizer phase waits for
// that production to finish, which could never happen if production only
// ran inside a data phase), and step N+1's data phase only picks it up;
// without prefetch every batch is made inside its own data phase, after the
// previous step's compute. The harness records data time in both modes; the
// wrapper predicts micro-steps, recovers from a jump, and rethrows a
// producer's error with its type.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/measure/harness/harness.h"
#include "bench/run/matrix.h"
#include "tests/support/shard_files.h"
#include "variants/data/data_source.h"
#include "variants/data/prefetch.h"
#include "variants/step/step.h"

namespace ladder {
namespace {

namespace fs = std::filesystem;

// Events of both threads, in one total order.
class EventLog {
 public:
  void add(const std::string& e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(e);
    }
    cv_.notify_all();
  }
  // Waits (up to a minute: a loaded machine is slow, never this slow) for `e`.
  bool wait_for(const std::string& e) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] { return find(e) >= 0; });
  }
  int64_t index(const std::string& e) const {
    std::lock_guard<std::mutex> lock(mu_);
    return find(e);
  }
  std::string dump() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& e : events_) out += e + "\n";
    return out;
  }

 private:
  int64_t find(const std::string& e) const {
    for (size_t i = 0; i < events_.size(); ++i)
      if (events_[i] == e) return int64_t(i);
    return -1;
  }
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> events_;
};

PrefetchListener log_to(EventLog& log) {
  return [&log](const PrefetchEvent& e) {
    const char* kind = e.kind == PrefetchEvent::kProduceBegin ? "produce_begin"
                       : e.kind == PrefetchEvent::kProduceEnd ? "produce_end"
                                                              : "hand_over";
    log.add(fmt::format("{} {}.{}", kind, e.step, e.micro));
  };
}

// Logs the step's data phase and the end of its compute; optionally holds the
// optimizer phase of step N until batch N+1 has been made.
class LoggingObserver final : public PhaseObserver {
 public:
  LoggingObserver(EventLog& log, bool wait_for_next) : log_(log), wait_(wait_for_next) {}
  int64_t step = 0;
  bool waits_ok = true;
  void begin(Phase p) override {
    if (p == Phase::kData) log_.add(fmt::format("data_begin {}", step));
    if (p == Phase::kOptimizer && wait_)
      waits_ok &= log_.wait_for(fmt::format("produce_end {}.0", step + 1));
  }
  void end(Phase p) override {
    if (p == Phase::kData) log_.add(fmt::format("data_end {}", step));
    if (p == Phase::kOptimizer) log_.add(fmt::format("compute_end {}", step));
  }

 private:
  EventLog& log_;
  bool wait_;
};

class Prefetch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ladder_prefetch_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    test::write_llmc(dir_ / "shard.bin", test::pattern_tokens(64 * 100 + 1, 1000));
    at::set_num_threads(1);  // as measure does with --threads 1; ctest runs each test alone
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunConfig config(bool prefetch) const {
    RunConfig c = config_for("tiny", Overrides{}, "cpu");
    c.data.path = (dir_ / "shard.bin").string();
    c.data.prefetch = prefetch;
    c.warmup = 1;
    c.steps = 3;
    c.threads = 1;
    return c;
  }

  fs::path dir_;
};

constexpr int64_t kSteps = 4;

TEST_F(Prefetch, NextBatchIsMadeWhileTheStepComputes) {
  EventLog log;
  const RunConfig c = config(/*prefetch=*/true);
  TrainStep step(c, torch::kCPU, make_token_source(c, torch::kCPU, log_to(log)));
  LoggingObserver obs(log, /*wait_for_next=*/true);
  for (int64_t n = 0; n < kSteps; ++n) {
    obs.step = n;
    step.run(n, obs);
  }
  EXPECT_TRUE(obs.waits_ok) << "batch N+1 was not made while step N computed:\n" << log.dump();
  for (int64_t n = 1; n < kSteps; ++n) {
    const int64_t made = log.index(fmt::format("produce_end {}.0", n));
    const int64_t started = log.index(fmt::format("produce_begin {}.0", n));
    const int64_t prev_compute_end = log.index(fmt::format("compute_end {}", n - 1));
    const int64_t data_begin = log.index(fmt::format("data_begin {}", n));
    const int64_t handed = log.index(fmt::format("hand_over {}.0", n));
    const int64_t data_end = log.index(fmt::format("data_end {}", n));
    ASSERT_GE(made, 0) << log.dump();
    EXPECT_LT(started, prev_compute_end) << log.dump();
    EXPECT_LT(made, prev_compute_end) << "batch " << n << " made before step " << n - 1
                                      << "'s compute ended\n" << log.dump();
    EXPECT_LT(data_begin, handed) << log.dump();
    EXPECT_LT(handed, data_end) << "the data phase only picks the batch up\n" << log.dump();
  }
}

TEST_F(Prefetch, WithoutPrefetchEachBatchIsMadeInsideItsDataPhase) {
  EventLog log;
  const RunConfig c = config(/*prefetch=*/false);
  TrainStep step(c, torch::kCPU, make_token_source(c, torch::kCPU, log_to(log)));
  LoggingObserver obs(log, /*wait_for_next=*/false);
  for (int64_t n = 0; n < kSteps; ++n) {
    obs.step = n;
    step.run(n, obs);
  }
  for (int64_t n = 0; n < kSteps; ++n) {
    const int64_t data_begin = log.index(fmt::format("data_begin {}", n));
    const int64_t started = log.index(fmt::format("produce_begin {}.0", n));
    const int64_t made = log.index(fmt::format("produce_end {}.0", n));
    const int64_t data_end = log.index(fmt::format("data_end {}", n));
    EXPECT_LT(data_begin, started) << log.dump();
    EXPECT_LT(started, made) << log.dump();
    EXPECT_LT(made, data_end) << log.dump();
    if (n > 0) {
      EXPECT_GT(started, log.index(fmt::format("compute_end {}", n - 1))) << log.dump();
    }
  }
  EXPECT_LT(log.index(fmt::format("produce_begin {}.0", kSteps)), 0) << "nothing made ahead";
}

TEST_F(Prefetch, HarnessRecordsDataTimeWithAndWithoutPrefetch) {
  for (bool prefetch : {true, false}) {
    const RunConfig c = config(prefetch);
    TrainStep step(c, torch::kCPU, make_token_source(c, torch::kCPU));
    const HarnessResult r = run_measurement(step, c, torch::kCPU);
    ASSERT_EQ(r.steps.size(), size_t(c.steps));
    for (const auto& s : r.steps) {
      EXPECT_GE(s.data_ms, 0.0);
      EXPECT_LE(s.data_ms, s.dt_ms) << "the data phase lies inside the step";
    }
    const auto d = step.data().describe();
    EXPECT_EQ(d.kind, "token_shards");
    EXPECT_EQ(d.prefetch.enabled, prefetch);
    // Every step run (the warm-up lasts until stable) consumed one batch.
    const int64_t steps_run = int64_t(r.warmup_steps.size() + r.steps.size());
    EXPECT_EQ(d.batches_consumed, steps_run);
    EXPECT_EQ(d.tokens_consumed, steps_run * c.batch * c.seq);
    if (!prefetch) {
      EXPECT_EQ(d.prefetch.batches_ready_on_request, 0);
    }
    EXPECT_EQ(d.prefetch.batches_not_predicted, 0);
  }
}

// Batches whose tokens say which (step, micro) they are; fails on one step.
class LabelledSource final : public TokenSource {
 public:
  explicit LabelledSource(int64_t fail_step = -1) : fail_step_(fail_step) {}
  Batch batch(int64_t step, int64_t micro) override {
    if (step == fail_step_) throw ConfigError(fmt::format("bad step {}", step));
    auto x = torch::full({1, 2}, step * 100 + micro, torch::kInt64);  // (B, T)
    return {x, x};
  }
  DataSection describe() const override {
    DataSection d;
    d.kind = "synthetic";
    return d;
  }

 private:
  int64_t fail_step_;
};

int64_t label(const Batch& b) { return b.x[0][0].item<int64_t>(); }

TEST(PrefetchWrapper, PredictsMicroStepsAndRecoversFromAJump) {
  auto src = make_prefetching_source(std::make_unique<LabelledSource>(), /*micro_steps=*/2, true);
  EXPECT_EQ(label(src->batch(0, 0)), 0);
  EXPECT_EQ(label(src->batch(0, 1)), 1);
  EXPECT_EQ(label(src->batch(1, 0)), 100);
  EXPECT_EQ(label(src->batch(5, 1)), 501);  // not predicted
  EXPECT_EQ(label(src->batch(6, 0)), 600);
  EXPECT_EQ(label(src->batch(2, 0)), 200);  // not predicted
  const auto d = src->describe();
  EXPECT_EQ(d.prefetch.batches_not_predicted, 2);  // (0, 0) is made from the start
  EXPECT_EQ(d.batches_consumed, 6);
  EXPECT_EQ(d.tokens_consumed, 12);
}

TEST(PrefetchWrapper, ProducerErrorReachesTheCallerWithItsType) {
  auto src = make_prefetching_source(std::make_unique<LabelledSource>(1), 1, true);
  EXPECT_EQ(label(src->batch(0, 0)), 0);
  EXPECT_THROW(src->batch(1, 0), ConfigError);  // made on the producer thread
  EXPECT_EQ(label(src->batch(2, 0)), 200);
  auto sync = make_prefetching_source(std::make_unique<LabelledSource>(1), 1, false);
  EXPECT_THROW(sync->batch(1, 0), ConfigError);
}

}  // namespace
}  // namespace ladder
