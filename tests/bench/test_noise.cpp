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
  const json n = monitor.to_json();
  const double wall = n["wall_ms"].get<double>(), cpu = n["cpu_ms"].get<double>();
  EXPECT_GE(wall, 120) << n.dump();
  EXPECT_LE(wall, bracket_ms) << n.dump();
  EXPECT_GE(cpu, 59) << n.dump();  // getrusage's microseconds, the burn's own 60 ms
  EXPECT_LE(cpu, wall - 55) << n.dump();  // CPU time, not wall: none while asleep (5 ms for the readings)
  EXPECT_NEAR(n["cpu_pct_of_threads"].get<double>(), 100.0 * cpu / wall, 1e-9) << n.dump();
  EXPECT_TRUE(n["involuntary_switches"].is_number());
  EXPECT_TRUE(n["gpu"].is_null());  // a CPU device
  EXPECT_EQ(n["device"], "cpu");
  // Its threads ran about half the wall time (below the 85 % shortfall): named.
  bool named = false;
  for (const auto& c : n["causes"]) named = named || c.get<std::string>().find("threads ran") != std::string::npos;
  EXPECT_TRUE(named) << n.dump();
}

TEST(Noise, CausesFromTheReadings) {
  const json quiet = {{"device", "cpu"}, {"steal_pct_of_wall", 0.1}, {"cpu_pct_of_threads", 98.0},
                      {"involuntary_switches_per_s", 3.0}, {"logical_cpus", 2}, {"load_1m", {{"end", 1.9}}}};
  EXPECT_TRUE(noise_causes(quiet).empty());
  json busy = quiet;
  busy["steal_pct_of_wall"] = 9.0;
  busy["load_1m"]["end"] = 3.4;
  busy["involuntary_switches_per_s"] = 450.0;
  const auto causes = noise_causes(busy);
  ASSERT_EQ(causes.size(), 3u);
  EXPECT_EQ(causes[0], "steal 9 % of wall time");
  EXPECT_EQ(causes[1], "450 involuntary context switches/s");
  EXPECT_EQ(causes[2], "load 3.4 on 2 CPUs");
  // A GPU: its throttle reasons and a falling clock; its host thread's CPU share is not a cause.
  const json gpu = {{"device", "cuda"}, {"cpu_pct_of_threads", 20.0},
                    {"gpu", {{"start", {{"sm_clock_mhz", 1980}, {"throttle_reasons", json::array()}}},
                             {"end", {{"sm_clock_mhz", 1755}, {"throttle_reasons", {"gpu_idle", "sw_thermal_slowdown"}}}}}}};
  const auto g = noise_causes(gpu);
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
