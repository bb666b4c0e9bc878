// profiler/trace/op_categories.h: where a step's time went, by category.
//
// The categories (the report's op_breakdown): GEMM, attention, elementwise
// and norm, softmax and loss, optimizer, communication, memcpy and memset,
// and idle/other. Pure functions over plain event records, so they are unit
// tested with hand-made events; the records come from Kineto on CPU
// (profiler/trace/kineto_session.h) and from CUPTI on CUDA (kernel_activity.h).
//
// Host (CPU) breakdown, over the operators of one thread within one step
// (and the same operators by phase and layer, from the ranges they ran in):
//  - operators nest (aten::linear > aten::addmm); each event's *self* time
//    (its duration minus its children's) is counted once, so the categories
//    sum to the step's span exactly, with no double counting;
//  - context decides first: anything inside the "optimizer" range counts as
//    optimizer, anything inside a communication op or an all-reduce bucket
//    range as communication;
//  - otherwise the innermost operator whose name matches a category decides
//    (the self time of aten::t inside aten::linear is GEMM);
//  - time in no operator (gaps, host code between ops) is idle; operators
//    that match nothing are other; both make up idle_other.
// Device (CUDA) breakdown, over kernels, memcpy and memset within one step:
//  - each kernel by its name, or optimizer when launched in the optimizer phase;
//  - idle is the step span not covered by any device activity; when streams
//    overlap, the categories exceed the span by overlap_ms.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/trace/breakdown_section.h"

namespace ladder::profiler {

// The category an operator or kernel name belongs to by itself, if any
// (case-insensitive patterns; see op_categories.cpp for the table).
std::optional<Category> category_of_name(const std::string& name);

// One host event: an operator, or a user range (profiler/ranges/range.h).
struct HostEvent {
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool user_range = false;  // a ScopedRange: matched by exact name only
  // The autograd sequence number (Kineto's "Sequence number"): a forward
  // operator's, and the same on the backward node made for it; -1 if none.
  int64_t sequence_nr = -1;
};

// One device activity.
struct DeviceEvent {
  enum class Kind { kKernel, kMemcpy, kMemset };
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  Kind kind = Kind::kKernel;
  bool in_optimizer = false;  // launched while the step was in its optimizer phase
  // The phase range open where it was launched, when the collector knows
  // (an Nsight import, profiler/nsys/nsys_capture.h): then the breakdown has
  // phases, each activity's time in its launch's phase (communication when
  // its category is), and its layer's ("layer 3") within forward or backward.
  enum class Phase { kUnknown, kOutside, kData, kForward, kBackward, kOptimizer, kCommunication };
  Phase phase = Phase::kUnknown;
  std::string layer{};
};

// What a range of profiler/ranges/range.h opens, by its name: a phase (data,
// forward, backward, optimizer), communication (an all-reduce bucket or
// ZeRO-1's parameter gather, wherever it runs), or kUnknown for any other
// (the step, a layer, a graph replay). The one rule the host breakdown, the
// Nsight import (nsys_capture.h) and the layer listener (range_spans.h) read.
DeviceEvent::Phase phase_of_range_name(std::string_view name);
// A per-layer range of --layer-ranges ("layer 3").
bool is_layer_range_name(std::string_view name);

// One operator's or kernel's share of a category: its own time and calls.
struct NameTotal {
  double ms = 0;
  int64_t calls = 0;
};

struct Breakdown {
  std::array<double, kCategoryCount> ms{};  // per category; idle_other = idle_ms + other_ms
  double span_ms = 0;     // the step as the trace saw it
  double idle_ms = 0;     // host: time in no operator; device: no activity on the device
  double other_ms = 0;    // operators or kernels no category matched
  double overlap_ms = 0;  // device: activity time beyond its union (concurrent streams)
  double busy_ms = 0;     // host: time in top-level operators; device: the union of activity
  int64_t events = 0;     // operators (host, nested included) or device activities
  int64_t kernels = 0;    // device: kernel activities
  int64_t memcpy_memset = 0;
  std::map<std::string, double> other_by_name_ms;  // what makes up other_ms
  // What makes up each category, by operator or kernel name (its self time
  // on the host); idle_other holds the names no category matched.
  std::array<std::map<std::string, NameTotal>, kCategoryCount> by_name;
  // Host: each operator's own time by the phase whose range it ran in (the
  // innermost data, forward, backward or optimizer range; communication
  // first, as for the categories), and by layer with --layer-ranges
  // ("forward/layer 3"). They sum to busy_ms.
  bool has_phases = false;
  PhasesMs phases;
  std::map<std::string, double> layer_ms;

  double sum_ms() const;
  Breakdown& operator+=(const Breakdown& o);
};

// `events`: one thread's events; those entirely inside [begin_ns, end_ns]
// (one step, e.g. its ProfilerStep#N range, which must not be in `events`)
// are counted.
Breakdown host_breakdown(const std::vector<HostEvent>& events, int64_t begin_ns, int64_t end_ns);

// Activities are clipped to [begin_ns, end_ns].
Breakdown device_breakdown(const std::vector<DeviceEvent>& events, int64_t begin_ns, int64_t end_ns);

// A kernel or operator name as a reader wants it: a mangled C++ symbol
// (CUPTI's kernel names) demangled, without its parameter list, and at most
// `max_chars` long (the rest elided with "..."); other names as they are.
std::string display_name(const std::string& name, size_t max_chars = 160);

// The report's section: categories in ms and in % of `dt_ms` (the
// harness's step time), averaged over `steps` steps whose breakdowns were
// summed into `total`, and in top_by_category the `top` largest names of each
// category (ms and calls per step, display_name'd), so that a band of the
// chart is never a mystery. `source` says what was classified; the caller
// adds what only it knows (its counts, its clock, the busy invariant).
OpBreakdownSection breakdown_section(const std::string& source, const Breakdown& total, int64_t steps, double dt_ms,
                                     size_t top = 8);

}  // namespace ladder::profiler
