// tests/bench/test_noise.cpp: what disturbed a process (bench/measure/observers/noise_monitor.h):
// the readings the monitor takes around the measured steps, and the causes
// it names from them; and the run table's noise line naming them.
#include <time.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/measure/observers/noise_monitor.h"
#include "reports/render/documents/run_document.h"

namespace ladder {
namespace {

using nlohmann::json;

// This thread's CPU time in ms (CLOCK_THREAD_CPUTIME_ID: what the thread ran,
// whatever else the machine did meanwhile).
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

TEST(Noise, ReadingsOfABusyProcess) {
  NoiseMonitor monitor(torch::kCPU, 1);
  const auto before = std::chrono::steady_clock::now();
  monitor.measurement_begins();
  // 60 ms of this thread's CPU time, then 60 ms asleep: counted in CPU time,
  // not wall time, so a busy machine (the suite beside a compile) stretches
  // the wall but not the work, and the threads ran at most about half of it.
  const double cpu0 = thread_cpu_ms();
  volatile double x = 0;
  while (thread_cpu_ms() - cpu0 < 60) x = x + 1;
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  monitor.measurement_ends(0);
  const double bracket_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - before).count();
  const NoiseSection n = monitor.section();
  const std::string shown = fields::to_json(n).dump();
  const double wall = n.wall_ms, cpu = n.cpu_ms.value();
  EXPECT_GE(wall, 120) << shown;
  EXPECT_LE(wall, bracket_ms) << shown;
  EXPECT_GE(cpu, 59) << shown;  // getrusage's microseconds, the burn's own 60 ms
  EXPECT_LE(cpu, wall - 55) << shown;  // CPU time, not wall: none while asleep (5 ms for the readings)
  EXPECT_NEAR(n.cpu_pct_of_threads.value(), 100.0 * cpu / wall, 1e-9) << shown;
  EXPECT_TRUE(n.involuntary_switches.has_value());
  EXPECT_FALSE(n.gpu.has_value());  // a CPU device
  EXPECT_EQ(n.device, "cpu");
  // Its threads ran about half the wall time (below the 85 % shortfall): named.
  bool named = false;
  for (const auto& c : n.causes) named = named || c.find("threads ran") != std::string::npos;
  EXPECT_TRUE(named) << shown;
  // Its JSON reads back as written, strictly.
  EXPECT_EQ(fields::to_json(fields::from_json<NoiseSection>(fields::to_json(n), "timing.noise")).dump(), shown);
}

TEST(Noise, CausesFromTheReadings) {
  NoiseSection quiet;
  quiet.device = "cpu";
  quiet.steal_pct_of_wall = 0.1;
  quiet.cpu_pct_of_threads = 98.0;
  quiet.involuntary_switches_per_s = 3.0;
  quiet.logical_cpus = 2;
  quiet.load_1m.end = 1.9;
  EXPECT_TRUE(noise_causes(quiet).empty());
  NoiseSection busy = quiet;
  busy.steal_pct_of_wall = 9.0;
  busy.load_1m.end = 3.4;
  busy.involuntary_switches_per_s = 450.0;
  const auto causes = noise_causes(busy);
  ASSERT_EQ(causes.size(), 3u);
  EXPECT_EQ(causes[0], "steal 9 % of wall time");
  EXPECT_EQ(causes[1], "450 involuntary context switches/s");
  EXPECT_EQ(causes[2], "load 3.4 on 2 CPUs");
  // A GPU: its throttle reasons and a falling clock; its host thread's CPU share is not a cause.
  NoiseSection gpu;
  gpu.device = "cuda";
  gpu.cpu_pct_of_threads = 20.0;
  GpuReadings readings;
  readings.start.sm_clock_mhz = std::optional<int64_t>(1980);
  readings.start.throttle_reasons = std::optional<std::vector<std::string>>(std::vector<std::string>{});
  readings.end.sm_clock_mhz = std::optional<int64_t>(1755);
  readings.end.throttle_reasons =
      std::optional<std::vector<std::string>>(std::vector<std::string>{"gpu_idle", "sw_thermal_slowdown"});
  gpu.gpu = readings;
  const auto g = noise_causes(gpu);
  GpuReadings unreadable;
  unreadable.start.unavailable = unreadable.end.unavailable = std::string("nvmlInit_v2 returned 9");
  gpu.gpu = unreadable;
  EXPECT_TRUE(noise_causes(gpu).empty());  // NVML unreadable: nothing to name, no failure
  ASSERT_EQ(g.size(), 2u) << json(g).dump();
  EXPECT_EQ(g[0], "GPU throttled (sw_thermal_slowdown)");
  EXPECT_EQ(g[1], "SM clock 1980 -> 1755 MHz");
}

TEST(Noise, TheRunTableNamesTheCauses) {
  const json row = {{"cell", "fp32"}, {"rung", "fp32"}, {"status", "ok"}, {"parity", {{"status", "baseline"}}},
                    {"noise", {{"quiet", true}, {"cv_limit", 0.05}, {"steps_cv", 0.01}, {"processes_cv", nullptr},
                               {"causes", {"steal 9 % of wall time"}}}}};
  const Document doc = summary_document({{"rows", json::array({row})}}, "summary.json");
  bool named = false;
  for (const auto& l : doc.notes) named = named || (l.lead == "noise:" && l.text.find("fp32 (steps 1.0 %; steal 9 % of wall time)") != std::string::npos);
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace ladder
