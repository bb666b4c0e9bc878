// profiler/trace/trace_breakdown.h: the op breakdown of a Kineto Chrome trace.
//
// A program that is not ladder (scripts/peer.py: PyTorch eager or
// torch.compile) profiles its own steps with torch.profiler and writes the
// trace (export_chrome_trace); ladder reads it back here and categorises it
// with the very functions that categorise a rung (profiler/trace/op_categories.h),
// so a peer's bars in the breakdown chart mean what the rungs' mean.
//
// What is read from the trace's traceEvents (ts and dur in microseconds):
//  - the steps: the "ProfilerStep#N" ranges (cat user_annotation) that
//    torch.profiler's step() opens; the program ends each step with a device
//    synchronisation, so a step's device work lies inside its range;
//  - host: the operators (cat cpu_op) and user ranges (cat user_annotation,
//    e.g. "optimizer") of the thread that ran the steps;
//  - device: kernels (cat kernel), copies (gpu_memcpy) and fills
//    (gpu_memset); a kernel whose launch (the cuda_runtime or cuda_driver
//    event with its correlation id) lies inside a user range named
//    "optimizer" counts as optimizer, as a rung's optimizer phase does.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "profiler/trace/op_categories.h"

namespace ladder::profiler {

struct TraceBreakdown {
  Breakdown total;             // summed over the steps, in ms
  int64_t steps = 0;           // ProfilerStep#N ranges found
  int64_t cpu_ops = 0;         // aten:: operators inside the steps, all threads
  int64_t graph_launches = 0;  // cudaGraphLaunch calls inside the steps
};

// device = true: the device breakdown (CUDA kernels, copies, fills); false:
// the host breakdown of the stepping thread's operators. Throws
// std::runtime_error saying what is missing when the trace has no
// traceEvents or no ProfilerStep#N range.
TraceBreakdown trace_breakdown(const nlohmann::json& trace, bool device);

}  // namespace ladder::profiler
