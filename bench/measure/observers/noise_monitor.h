// bench/measure/observers/noise_monitor.h: what disturbed a process while it measured, on the
// harness's observer list (bench/measure/observers/step_observer.h).
//
// At the start and the end of the measured steps it reads what the machine
// says about contention: the process's CPU time against the wall time its
// threads had (getrusage), its involuntary context switches (the scheduler
// took a core away), the time the hypervisor gave this VM's CPUs to other
// guests (/proc/stat steal), the load average against the logical CPUs, and
// on CUDA the GPU's SM clock, temperature, power and throttle reasons
// (bench/measure/device/device.h gpu_state, NVML). The report's timing.noise holds both
// readings and the causes it can name ("steal 9 % of wall time"); the noise
// line of a run and `ladder compare` show them.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "bench/measure/observers/step_observer.h"
#include "reports/model/report/noise_section.h"

namespace ladder {

// Time the hypervisor gave this VM's CPUs to others (/proc/stat "steal",
// all CPUs, in ms, since boot); -1 where it cannot be read.
double host_steal_ms();

class NoiseMonitor final : public StepObserver {
 public:
  NoiseMonitor(const torch::Device& device, int threads) : device_(device), threads_(threads) {}
  void measurement_begins() override { start_ = read(); }
  void measurement_ends(int64_t) override { end_ = read(); }
  // timing.noise: the two readings, what they add up to, and the causes
  // (the probe is the harness's to add).
  NoiseSection section() const;

  struct Reading {
    std::chrono::steady_clock::time_point when;
    double cpu_ms = -1;                   // user + system time of this process
    long involuntary_switches = -1, voluntary_switches = -1;
    double steal_ms = -1;                 // summed over the host's CPUs; -1: unreadable
    double load_1m = -1;                  // /proc/loadavg
    std::optional<GpuSnapshot> gpu;       // gpu_state; none on a CPU
  };

 private:
  Reading read() const;

  torch::Device device_;
  int threads_;
  Reading start_, end_;
};

// The causes of noise a noise section shows, as short phrases ("steal 9 % of
// wall time"); empty when it shows none.
std::vector<std::string> noise_causes(const NoiseSection& noise);

}  // namespace ladder
