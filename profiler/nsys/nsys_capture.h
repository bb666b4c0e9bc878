// profiler/nsys/nsys_capture.h: an Nsight Systems capture of ladder, as the op
// breakdown's band, phase and kernel tables (`ladder nsys-import`).
//
// What Nsight records, as plain records: the device's activities (kernels,
// memcpy, memset) with, for each, the host thread and time of the CUDA call
// that launched it (CUPTI's runtime record, matched by correlation id), and
// the NVTX ranges of every thread. import_capture turns them into the same
// figures as ladder's own CUPTI breakdown (op_categories.h):
//  - a step is an NVTX range "step <rung>" (profiler/ranges/range.h); an activity
//    belongs to the step whose range holds its launch, and the step's device
//    span runs from its first activity's start to its last one's end;
//  - bands: device_breakdown over each step's activities, summed;
//  - phases, the way Nsight's nvtx_gpu_proj projects ranges: an activity
//    counts in the innermost data, forward, backward or optimizer range open
//    on its launching thread at launch, and in the innermost "layer <i>"
//    there. A thread with no phase range open (the autograd thread that runs
//    an eager rung's backward, which opens only its layer ranges) takes the
//    phase open on another thread of the process at that moment (the main
//    thread's "backward"). Inside an all-reduce bucket or ZeRO-1 gather
//    range, or an NCCL kernel: communication. A CUDA graph's kernels are
//    launched by one replay (cudaGraphLaunch), so they count in the replay's
//    range: "forward+backward (CUDA graph)" is not a phase, and they count
//    as outside (the note says so).
// Pure, so it is unit tested with hand-made records; profiler/nsys/nsys_sqlite.h
// reads them from an `nsys export --type sqlite` file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace/breakdown_section.h"
#include "profiler/trace/op_categories.h"

namespace ladder::profiler {

// One NVTX range (push/pop or start/end) on one thread.
struct CaptureRange {
  std::string name;
  int64_t start_ns = 0, end_ns = 0;
  int64_t tid = 0;
};

// One device activity and its launch (launch_tid 0: no runtime record
// matched it; it counts in the step that holds its own start).
struct CaptureActivity {
  std::string name;
  DeviceEvent::Kind kind = DeviceEvent::Kind::kKernel;
  int64_t start_ns = 0, end_ns = 0;
  int64_t launch_ns = 0, launch_tid = 0;
};

// One process of a capture (one rank).
struct Capture {
  int64_t pid = 0;
  std::vector<CaptureRange> ranges;
  std::vector<CaptureActivity> activities;
};

struct ImportedCapture {
  OpBreakdownSection section;  // source, categories, kernels, phases, layers per step
  std::string rung;            // from the step ranges' names
  std::vector<std::string> notes;
};

// Throws ConfigError (naming `what`, the file) when the capture holds no
// "step <rung>" range or no activity inside one.
ImportedCapture import_capture(const Capture& capture, const std::string& what);

}  // namespace ladder::profiler
