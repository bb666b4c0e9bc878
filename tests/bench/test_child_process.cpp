// tests/bench/test_child_process.cpp: the runner's children (bench/run/child_process.h)
// under Ctrl-C: forwarded to them, and one that ignores it is stopped after
// the interrupt's grace, so the run goes on to write what it measured.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "bench/run/child_process.h"

namespace ladder {
namespace {

std::vector<ChildOutcome> interrupted_after(const std::string& script, double interrupt_grace_s) {
  InterruptHandler handler;
  std::thread ctrl_c([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(getpid(), SIGINT);
  });
  auto out = run_children({"/bin/sh", "-c", script}, {EnvVars{}}, /*timeout_s=*/60, /*grace_s=*/60, {},
                          interrupt_grace_s);
  ctrl_c.join();
  EXPECT_TRUE(interrupted());
  return out;
}

TEST(ChildProcess, CtrlCReachesTheChild) {
  const auto out = interrupted_after("exec sleep 60", 5);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].signal, SIGINT) << describe_outcome(out[0]);
  EXPECT_FALSE(out[0].timed_out);
  EXPECT_LT(out[0].seconds, 5);
}

// A child that ignores SIGINT (a peer inside torch.compile's autotuning did,
// for minutes) is stopped with SIGTERM once the grace is over.
TEST(ChildProcess, ChildIgnoringCtrlCIsStoppedAfterTheGrace) {
  const auto out = interrupted_after("trap '' INT; exec sleep 60", 0.5);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].timed_out) << describe_outcome(out[0]);
  EXPECT_EQ(out[0].signal, SIGTERM) << describe_outcome(out[0]);
  EXPECT_GT(out[0].seconds, 0.7);
  EXPECT_LT(out[0].seconds, 5);
}

}  // namespace
}  // namespace ladder
