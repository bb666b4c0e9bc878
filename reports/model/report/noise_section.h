// reports/model/report/noise_section.h: timing.noise, what disturbed a
// process's measured steps (bench/measure/observers/noise_monitor.h), with
// its speed probe (bench/measure/observers/speed_probe.h), as structs whose
// fields are their JSON, its strict reading and their schema
// (profiler/common/fields.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/common/fields.h"

namespace ladder {

// One NVML reading of the GPU (bench/measure/device/cuda/gpu_state.cpp):
// unavailable alone where NVML could not be read, else the device's bus id
// and each figure, null where its call failed.
struct GpuSnapshot {
  fields::Maybe<std::string> unavailable;
  fields::Maybe<std::string> pci_bus_id;
  fields::Maybe<std::optional<int64_t>> sm_clock_mhz, temperature_c;
  fields::Maybe<std::optional<double>> power_w;
  fields::Maybe<std::optional<std::vector<std::string>>> throttle_reasons;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("unavailable", s.unavailable, "why NVML could not be read; nothing else then");
    v("pci_bus_id", s.pci_bus_id);
    v("sm_clock_mhz", s.sm_clock_mhz);
    v("temperature_c", s.temperature_c);
    v("power_w", s.power_w);
    v("throttle_reasons", s.throttle_reasons, "NVML's clock event reasons by name (gpu_idle among them)");
  }
};

struct GpuReadings {
  GpuSnapshot start, end;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("start", s.start);
    v("end", s.end);
  }
};

struct LoadReadings {
  double start = -1, end = -1;  // /proc/loadavg's 1-minute load; -1 where unreadable
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("start", s.start);
    v("end", s.end);
  }
};

// One run of the probe's workload: each kind's median repetition, its rate,
// the whole probe's wall time, and every repetition.
struct ProbeRun {
  double gemm_ms = 0, sweep_ms = 0;
  std::optional<double> gemm_tflops, sweep_gb_per_s;
  double wall_ms = 0;
  std::vector<double> gemm_reps_ms, sweep_reps_ms;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("gemm_ms", s.gemm_ms);
    v("sweep_ms", s.sweep_ms);
    v("gemm_tflops", s.gemm_tflops);
    v("sweep_gb_per_s", s.sweep_gb_per_s);
    v("wall_ms", s.wall_ms, "the whole probe: its buffers, the untimed and the timed repetitions (its cost)");
    v("gemm_reps_ms", s.gemm_reps_ms);
    v("sweep_reps_ms", s.sweep_reps_ms);
  }
};

// The speed probe of one process: a fixed GEMM and memory sweep timed just
// before the measured steps and after them; error, and no readings, where a
// reading failed.
struct ProbeSection {
  std::string workload;
  fields::Maybe<int64_t> sweep_bytes;
  fields::Maybe<ProbeRun> before, after;
  std::optional<double> speed_index_per_s;
  fields::Maybe<std::optional<double>> drift_pct;
  fields::Maybe<std::string> basis, error;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("workload", s.workload, "the workload's key: only processes with the same key are compared");
    v("sweep_bytes", s.sweep_bytes,
      fields::Doc("the swept buffer's bytes; the speed of light takes the sweep's best repetition as this process's "
                  "own memory speed (absent before 2026-12-03)")
          .min(1));
    v("before", s.before);
    v("after", s.after);
    v("speed_index_per_s", s.speed_index_per_s, "1000 / (gemm_ms + sweep_ms), each the mean of the two readings");
    v("drift_pct", s.drift_pct, "the probe's time after against before");
    v("basis", s.basis);
    v("error", s.error, "why a reading failed (the process's measurement stands without the probe)");
  }
};

struct NoiseSection {
  double wall_ms = 0;
  int64_t threads = 0, logical_cpus = 0;
  std::optional<double> cpu_ms, cpu_pct_of_threads;
  std::optional<int64_t> involuntary_switches;
  std::optional<double> involuntary_switches_per_s, steal_pct_of_wall;
  LoadReadings load_1m;
  std::optional<GpuReadings> gpu;  // null on a CPU
  std::string device;
  std::vector<std::string> causes;
  fields::Maybe<ProbeSection> probe;  // absent in reports from before the probe
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("wall_ms", s.wall_ms, "the measured steps' wall time");
    v("threads", s.threads, "the process's intra-op threads");
    v("logical_cpus", s.logical_cpus);
    v("cpu_ms", s.cpu_ms, "the process's user and system time over the measured steps");
    v("cpu_pct_of_threads", s.cpu_pct_of_threads, "cpu_ms over the threads' wall time");
    v("involuntary_switches", s.involuntary_switches);
    v("involuntary_switches_per_s", s.involuntary_switches_per_s);
    v("steal_pct_of_wall", s.steal_pct_of_wall, "steal over the host's CPUs, as a share of their wall time");
    v("load_1m", s.load_1m);
    v("gpu", s.gpu, "the GPU's NVML readings at the start and the end; null on a CPU");
    v("device", s.device, fields::Doc().one_of({"cpu", "cuda"}));
    v("causes", s.causes, "what passed a threshold, as short phrases");
    v("probe", s.probe,
      "the speed probe (bench/measure/observers/speed_probe.h): a fixed GEMM and memory sweep timed just before the "
      "measured steps (on CUDA before the warm-up) and after them; speed_index_per_s is comparable between "
      "processes with the same workload");
  }
};

}  // namespace ladder
