// bench/measure/observers/noise_monitor.cpp: see noise_monitor.h.
#include "bench/measure/observers/noise_monitor.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "bench/measure/device/device.h"

namespace ladder {

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

NoiseSection NoiseMonitor::section() const {
  const double wall_ms = std::chrono::duration<double, std::milli>(end_.when - start_.when).count();
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  auto known = [](double a, double b) { return a >= 0 && b >= 0; };
  NoiseSection n;
  n.wall_ms = wall_ms;
  n.threads = threads_;
  n.logical_cpus = cpus;
  if (known(start_.cpu_ms, end_.cpu_ms)) n.cpu_ms = end_.cpu_ms - start_.cpu_ms;
  if (n.cpu_ms && wall_ms > 0) n.cpu_pct_of_threads = 100.0 * *n.cpu_ms / (wall_ms * threads_);
  const long switches = end_.involuntary_switches - start_.involuntary_switches;
  if (start_.involuntary_switches >= 0) n.involuntary_switches = switches;
  if (start_.involuntary_switches >= 0 && wall_ms > 0) n.involuntary_switches_per_s = double(switches) / (wall_ms / 1e3);
  if (known(start_.steal_ms, end_.steal_ms) && wall_ms > 0 && cpus > 0)
    n.steal_pct_of_wall = 100.0 * (end_.steal_ms - start_.steal_ms) / (wall_ms * double(cpus));
  n.load_1m = {start_.load_1m, end_.load_1m};
  if (start_.gpu && end_.gpu) n.gpu = GpuReadings{*start_.gpu, *end_.gpu};
  n.device = device_.is_cuda() ? "cuda" : "cpu";
  n.causes = noise_causes(n);
  return n;
}

std::vector<std::string> noise_causes(const NoiseSection& n) {
  std::vector<std::string> causes;
  if (n.steal_pct_of_wall && *n.steal_pct_of_wall > kStealPct)
    causes.push_back(fmt::format("steal {:.0f} % of wall time", *n.steal_pct_of_wall));
  // On a GPU the host thread waits for the device: its CPU share says nothing.
  if (const auto cpu = n.cpu_pct_of_threads; n.device == "cpu" && cpu && *cpu >= 0 && *cpu < kCpuShortfallPct)
    causes.push_back(fmt::format("its threads ran {:.0f} % of the wall time", *cpu));
  if (n.involuntary_switches_per_s && *n.involuntary_switches_per_s > kSwitchesPerS)
    causes.push_back(fmt::format("{:.0f} involuntary context switches/s", *n.involuntary_switches_per_s));
  const double cpus = double(n.logical_cpus);
  if (cpus > 0 && n.load_1m.end > cpus + 0.5) causes.push_back(fmt::format("load {:.1f} on {:.0f} CPUs", n.load_1m.end, cpus));
  if (n.gpu) {
    const GpuSnapshot &a = n.gpu->start, &b = n.gpu->end;
    if (b.throttle_reasons && *b.throttle_reasons)
      for (const auto& r : **b.throttle_reasons)
        if (r != "gpu_idle" && r != "applications_clocks_setting") causes.push_back(fmt::format("GPU throttled ({})", r));
    const bool clocks = a.sm_clock_mhz && *a.sm_clock_mhz && b.sm_clock_mhz && *b.sm_clock_mhz;
    if (clocks && double(**b.sm_clock_mhz) < double(**a.sm_clock_mhz) * (1 - kClockDropPct / 100))
      causes.push_back(fmt::format("SM clock {} -> {} MHz", **a.sm_clock_mhz, **b.sm_clock_mhz));
  }
  return causes;
}

}  // namespace ladder
