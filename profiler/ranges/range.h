// profiler/ranges/range.h: one named range, seen by Nsight Systems and by Kineto.
//
// ScopedRange opens an NVTX range (profiler/ranges/nvtx.h) and a RecordFunction of
// scope USER_SCOPE with the same name, so a range shows in an Nsight timeline
// and as a "user_annotation" in a Kineto/Chrome trace (Perfetto, HTA). With
// neither tool attached, both are near-free: NVTX calls a no-op function
// pointer and the RecordFunction sees no callbacks. A build configured with
// -DLADDER_WITH_PROFILER=OFF compiles every range to nothing.
//
// The ranges of one step (variants/step/step.cpp, variants/model/model.cpp, the harness):
//
//   measured steps                 around the measured loop (nsys capture range)
//     step <rung>                  one optimizer step, e.g. "step fp32"
//       data                       per micro-step
//       forward                    per micro-step
//         layer <i>                with --layer-ranges: block i, i = 0..L-1
//         attention                each block's attention (inside its layer's range)
//       backward                   per micro-step
//         layer <i>                with --layer-ranges: block i, i = L-1..0
//       optimizer                  clip, schedule, AdamW, zero_grad
//
// Data parallelism adds one range per gradient bucket, named by
// names::allreduce_bucket(i) ("all-reduce bucket 3"), around the code that
// launches that bucket's all-reduce:
//
//   { ladder::profiler::ScopedRange r(ladder::profiler::names::allreduce_bucket(i));
//     work = process_group->allreduce(bucket_tensors); }
//
// A range must open and close on the same thread (NVTX ranges are per thread).
// The trace profiler (profiler/trace/trace_profiler.h) adds "ProfilerStep#<step>"
// around each step while it records, as torch.profiler does.
#pragma once

#include <cstdint>
#include <string>

#ifdef LADDER_WITH_PROFILER
#include <ATen/record_function.h>

#include "profiler/ranges/nvtx.h"
#endif

namespace ladder::profiler {

namespace names {
inline constexpr const char* kMeasuredSteps = "measured steps";
inline constexpr const char* kData = "data";
inline constexpr const char* kForward = "forward";
inline constexpr const char* kBackward = "backward";
inline constexpr const char* kOptimizer = "optimizer";
// Around each block's attention (q, k, v in, y out), whichever way it runs:
// the operators inside, and the backward nodes made for them, count in the
// attention band (op_categories.h), so explicit or math attention's batched
// matmuls and softmax are not read as GEMM and loss.
inline constexpr const char* kAttention = "attention";
// The CUDA-graph path (the fused rung on CUDA): one replay is the forward and
// backward of a micro-step, or with fused AdamW the whole last micro-step
// including clip, optimizer and zeroing, and runs no host code, so it is one
// range; the first step captures each graph inside kCaptureGraph.
inline constexpr const char* kForwardBackwardGraph = "forward+backward (CUDA graph)";
inline constexpr const char* kStepGraph = "forward+backward+optimizer (CUDA graph)";
inline constexpr const char* kCaptureGraph = "capture CUDA graph";
// ZeRO-1's parameter gather: every rank's updated range broadcast to the
// others, in the optimizer phase (variants/ddp/zero1.h).
inline constexpr const char* kZero1Gather = "zero1 parameter gather";
std::string step(const std::string& rung);     // "step fp32"
const char* layer(int64_t index);              // "layer 3"; the pointer stays valid
std::string allreduce_bucket(int64_t index);   // "all-reduce bucket 3"
std::string profiler_step(int64_t step);       // "ProfilerStep#5", the marker HTA reads
}  // namespace names

// Whether this build has ranges and the trace profiler (LADDER_WITH_PROFILER).
bool compiled_in();

#ifdef LADDER_WITH_PROFILER
class ScopedRange {
 public:
  explicit ScopedRange(const char* name) : record_(at::RecordScope::USER_SCOPE) {
    nvtx::push(name);
    if (record_.isActive()) record_.before(name);
  }
  explicit ScopedRange(const std::string& name) : ScopedRange(name.c_str()) {}
  ~ScopedRange() { nvtx::pop(); }  // record_'s destructor ends the RecordFunction
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;

 private:
  at::RecordFunction record_;
};
#else
class ScopedRange {
 public:
  explicit ScopedRange(const char*) {}
  explicit ScopedRange(const std::string&) {}
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};
#endif

// For a range whose ends are in two different callbacks (the per-layer
// backward ranges, opened and closed by autograd nodes): a per-thread stack of
// open ranges. end_range() closes the innermost range this thread opened with
// begin_range(); it does nothing when that stack is empty.
void begin_range(const char* name);
void end_range();
// Ranges this thread opened with begin_range() and has not closed yet.
int64_t open_ranges();

}  // namespace ladder::profiler
