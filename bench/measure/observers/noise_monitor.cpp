// bench/measure/observers/noise_monitor.cpp: see noise_monitor.h.
#include "bench/measure/observers/noise_monitor.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "bench/measure/device/device.h"

namespace ladder {

using nlohmann::json;

double host_steal_ms() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return -1;
  unsigned long long v[8] = {};
  const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                            &v[5], &v[6], &v[7]);
  std::fclose(f);
  const long hz = sysconf(_SC_CLK_TCK);
  return n == 8 && hz > 0 ? double(v[7]) * 1000.0 / double(hz) : -1;
}

namespace {

double load_1m() {
  std::ifstream f("/proc/loadavg");
  double load = -1;
  return f >> load ? load : -1;
}

// Thresholds past which a reading is named as a cause: small enough to catch
// what moved a rung by a few percent, large enough that a quiet VM names none.
constexpr double kStealPct = 2.0;         // of the host's CPU time
constexpr double kCpuShortfallPct = 85.0;  // of the threads' wall time (CPU devices)
constexpr double kSwitchesPerS = 100.0;   // involuntary
constexpr double kClockDropPct = 5.0;     // SM clock, end against start

}  // namespace

NoiseMonitor::Reading NoiseMonitor::read() const {
  Reading r;
  r.when = std::chrono::steady_clock::now();
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    r.cpu_ms = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
               double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    r.involuntary_switches = ru.ru_nivcsw;
    r.voluntary_switches = ru.ru_nvcsw;
  }
  r.steal_ms = host_steal_ms();
  r.load_1m = load_1m();
  r.gpu = gpu_state(device_);
  return r;
}

json NoiseMonitor::to_json() const {
  const double wall_ms = std::chrono::duration<double, std::milli>(end_.when - start_.when).count();
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  auto known = [](double a, double b) { return a >= 0 && b >= 0; };
  json j = {{"wall_ms", wall_ms}, {"threads", threads_}, {"logical_cpus", cpus}};
  j["cpu_ms"] = known(start_.cpu_ms, end_.cpu_ms) ? json(end_.cpu_ms - start_.cpu_ms) : json();
  j["cpu_pct_of_threads"] = j["cpu_ms"].is_number() && wall_ms > 0
                                ? json(100.0 * j["cpu_ms"].get<double>() / (wall_ms * threads_))
                                : json();
  const long switches = end_.involuntary_switches - start_.involuntary_switches;
  j["involuntary_switches"] = start_.involuntary_switches >= 0 ? json(switches) : json();
  j["involuntary_switches_per_s"] =
      start_.involuntary_switches >= 0 && wall_ms > 0 ? json(double(switches) / (wall_ms / 1e3)) : json();
  j["steal_pct_of_wall"] = known(start_.steal_ms, end_.steal_ms) && wall_ms > 0 && cpus > 0
                               ? json(100.0 * (end_.steal_ms - start_.steal_ms) / (wall_ms * double(cpus)))
                               : json();
  j["load_1m"] = {{"start", start_.load_1m}, {"end", end_.load_1m}};
  j["gpu"] = start_.gpu.is_null() ? json() : json{{"start", start_.gpu}, {"end", end_.gpu}};
  j["device"] = device_.is_cuda() ? "cuda" : "cpu";
  j["causes"] = noise_causes(j);
  return j;
}

std::vector<std::string> noise_causes(const json& n) {
  std::vector<std::string> causes;
  auto number = [&](const char* key) { return n.contains(key) && n[key].is_number() ? n[key].get<double>() : -1.0; };
  if (const double steal = number("steal_pct_of_wall"); steal > kStealPct)
    causes.push_back(fmt::format("steal {:.0f} % of wall time", steal));
  // On a GPU the host thread waits for the device: its CPU share says nothing.
  if (const double cpu = number("cpu_pct_of_threads"); n.value("device", "") == "cpu" && cpu >= 0 && cpu < kCpuShortfallPct)
    causes.push_back(fmt::format("its threads ran {:.0f} % of the wall time", cpu));
  if (const double sw = number("involuntary_switches_per_s"); sw > kSwitchesPerS)
    causes.push_back(fmt::format("{:.0f} involuntary context switches/s", sw));
  const double cpus = number("logical_cpus");
  if (n.contains("load_1m") && n["load_1m"].value("end", -1.0) > cpus + 0.5 && cpus > 0)
    causes.push_back(fmt::format("load {:.1f} on {:.0f} CPUs", n["load_1m"]["end"].get<double>(), cpus));
  const json gpu = n.value("gpu", json());
  if (gpu.is_object() && gpu["end"].is_object() && gpu["end"].contains("sm_clock_mhz")) {
    const json &a = gpu["start"], &b = gpu["end"];
    for (const auto& r : b.value("throttle_reasons", json::array()))
      if (r != "gpu_idle" && r != "applications_clocks_setting")
        causes.push_back(fmt::format("GPU throttled ({})", r.get<std::string>()));
    if (a.value("sm_clock_mhz", json()).is_number() && b["sm_clock_mhz"].is_number() &&
        b["sm_clock_mhz"].get<double>() < a["sm_clock_mhz"].get<double>() * (1 - kClockDropPct / 100))
      causes.push_back(fmt::format("SM clock {} -> {} MHz", a["sm_clock_mhz"].get<int>(), b["sm_clock_mhz"].get<int>()));
  }
  return causes;
}

}  // namespace ladder
