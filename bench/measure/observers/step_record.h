// bench/measure/observers/step_record.h: what the harness records of one step.
#pragma once

#include <array>
#include <algorithm>
#include <cstdint>

#include "variants/step/phases.h"


namespace ladder {

// One measured step's memory, read by the memory monitor (bench/measure/observers/memory_monitor.h).
struct StepMemory {
  bool cuda = false;                 // whether the allocator fields below are measured
  bool cpu_counting = false;         // CPU: peak_allocated_bytes from the counting allocator (bench/measure/device/cpu_allocator.h)
  int64_t peak_active_bytes = 0;     // CUDA caching allocator
  int64_t peak_reserved_bytes = 0;
  int64_t peak_allocated_bytes = 0;
  int64_t alloc_retries = 0;         // added during this step
  int64_t ooms = 0;
  int64_t peak_rss_bytes = 0;        // host VmHWM during this step
  // Whether peak_allocated_bytes was measured: always by CUDA's allocator, on CPU when counted.
  bool allocated_measured() const { return cuda || cpu_counting; }
};

struct StepRecord {
  int64_t step = 0;
  double dt_ms = 0;
  double tokens_per_s = 0;
  double loss = 0;
  double grad_norm = 0;
  double lr = 0;
  int64_t tokens = 0;
  // Host wall time in the data phase, summed over micro-steps (bench/measure/harness/harness.h).
  double data_ms = 0;
  bool has_phases = false;
  std::array<double, 4> phase_ms{};  // indexed like kPhases (variants/step/phases.h)
  // CPU device only: the process's CPU time in each phase, all its threads,
  // and in the ddp rung's wait for its all-reduce (left out of backward's).
  bool has_phase_cpu = false;
  std::array<double, 4> phase_cpu_ms{};
  double wait_cpu_ms = 0;
  // ddp: the gradient all-reduce of this step, from the comm events.
  bool has_comm = false;
  int buckets = 0;
  int64_t allreduce_bytes = 0;
  double allreduce_ms = 0;          // wall time some bucket was in flight (union of intervals)
  double allreduce_exposed_ms = 0;  // in flight after backward's compute ended (the wait)
  double overlap_pct = 0;           // share of allreduce_ms hidden behind backward
  // ZeRO-1: its parameter gather (broadcasts) in the optimizer phase.
  bool has_gather = false;
  int64_t gather_bytes = 0;
  double gather_ms = 0;  // host time, first launch to the last wait's return
  // ddp: what this rank sent in the step (bench/measure/observers/traffic_monitor.h).
  bool has_traffic = false;
  int64_t collective_payload_bytes = 0;  // handed to the collectives
  int64_t sent_bytes_ring = 0;           // what a ring sends from this rank for them
  int64_t net_tx_bytes = -1, net_rx_bytes = -1;  // the host's interfaces, loopback excluded; -1: not read
  bool has_memory = false;           // measured steps only
  StepMemory memory;
};

// The step's communication wait: the all-reduce's exposed time (in the
// backward phase, where the rank waits for the last bucket) and ZeRO-1's
// gather (in the optimizer phase).
inline double comm_wait_ms(const StepRecord& r) {
  return (r.has_comm ? r.allreduce_exposed_ms : 0.0) + (r.has_gather ? r.gather_ms : 0.0);
}

// The step's phases with that wait taken out of the phase it happened in.
inline std::array<double, 4> compute_phase_ms(const StepRecord& r) {
  std::array<double, 4> p = r.phase_ms;
  double& backward = p[size_t(Phase::kBackward)];
  double& optimizer = p[size_t(Phase::kOptimizer)];
  if (r.has_comm) backward = std::max(0.0, backward - r.allreduce_exposed_ms);
  if (r.has_gather) optimizer = std::max(0.0, optimizer - r.gather_ms);
  return p;
}

}  // namespace ladder
