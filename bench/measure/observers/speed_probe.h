// bench/measure/observers/speed_probe.h: a fixed-work speed probe, timed in every process
// before its measured steps (on CUDA before the warm-up) and after them.
//
// A shared VM's speed changes with its neighbours' memory traffic and the
// host's clocks; none of the noise monitor's readings (CPU time, context
// switches, steal, load: bench/measure/observers/noise_monitor.h) sees that. Calibrated
// benchmark suites time a fixed reference workload beside the code under test
// to tell "my code changed" from "the machine changed"; so does this. Its work
// never changes between builds or rungs of the same precision, so a process
// whose probe ran slower ran on a slower machine.
//
// The workload (chosen by measurement: bench/README.md, "the speed probe"):
//   gemm   an N x N by N x N matmul in the rung's matmul precision (bf16 where
//          the rung's bf16 acts, else fp32 under the process's fp32 matmul
//          mode, so tf32 where tf32 acts), timed `reps` times;
//   sweep  one in-place pass over a buffer larger than the last-level cache
//          (reads and writes every byte: memory bandwidth), `reps` times.
// Each kind's figure is the median of its timed repetitions, after one
// untimed one. The probe runs on the rung's device with the process's threads
// and is timed by the harness's step timer (CUDA events on a GPU).
#pragma once

#include <string>
#include <vector>

#include "reports/model/report/noise_section.h"
#include <torch/torch.h>

#include "bench/measure/device/device_types.h"

namespace ladder {

struct ProbeWorkload {
  std::string device;           // "cpu" or "cuda"
  torch::ScalarType gemm_dtype = torch::kFloat;
  int64_t gemm_n = 0;           // (N, N) @ (N, N)
  int64_t sweep_bytes = 0;      // the swept buffer
  int reps = 0;                 // timed repetitions of each kind
  int threads = 0;              // a CPU's intra-op threads (a ddp rank's share); 0 on CUDA
  // "cpu fp32 gemm 512 + sweep 64 MiB, 9 reps, 2 threads": processes with the
  // same key ran the same work, and only their probes are compared.
  std::string key() const;
  double gemm_flop() const { return 2.0 * double(gemm_n) * double(gemm_n) * double(gemm_n); }
};

// The probe's workload on `device`, its GEMM in bf16 or fp32, on a CPU with
// the process's intra-op threads (at::get_num_threads()).
ProbeWorkload probe_workload(const torch::Device& device, bool bf16);

struct ProbeReading {
  double gemm_ms = 0;   // the median repetition
  double sweep_ms = 0;
  std::vector<double> gemm_reps_ms, sweep_reps_ms;
  double wall_ms = 0;  // the whole probe: its buffers, the untimed and the timed repetitions (its cost)
};

// Runs the workload once (an untimed repetition of each kind first).
ProbeReading run_speed_probe(const ProbeWorkload& w, const torch::Device& device, StepTimer& timer);

// The probe's speed index: probe workloads per second, 1000 / (gemm_ms +
// sweep_ms) with each kind's mean over the readings before and after. Only
// comparable between processes whose workload key is the same.
double probe_speed_index(const ProbeReading& before, const ProbeReading& after);

// timing.noise.probe: the workload, both readings, their rates and the index.
ProbeSection probe_section(const ProbeWorkload& w, const ProbeReading& before, const ProbeReading& after);

// One process's two probes, as the harness runs them. A probe that fails (a
// device out of memory after a rung that filled it) is recorded, never fatal:
// the process's measurement stands without it.
class SpeedProbeRun {
 public:
  SpeedProbeRun(const torch::Device& device, bool bf16, StepTimer& timer)
      : device_(device), workload_(probe_workload(device, bf16)), timer_(timer) {}
  void before() { ok_before_ = run(before_); }
  void after() { ok_after_ = run(after_); }
  // probe_section, or the workload and its error when a reading failed.
  ProbeSection section() const;

 private:
  bool run(ProbeReading& into);

  torch::Device device_;
  ProbeWorkload workload_;
  StepTimer& timer_;
  ProbeReading before_, after_;
  bool ok_before_ = false, ok_after_ = false;
  std::string error_;
};

}  // namespace ladder
