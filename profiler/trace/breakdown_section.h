// profiler/trace/breakdown_section.h: a rung report's op_breakdown and op_counts
// sections as structs (profiler/common/fields.h): where one profiled step's
// time went, by category, and how many operators and kernels it ran. Their
// JSON and their part of reports/rung_report.schema.json come from the field
// lists below.
//
// profiler/trace/op_categories.h fills the categories (breakdown_section), and its
// three producers add what they know: the harness's CPU steps under Kineto
// and its CUDA steps under CUPTI (bench/measure/harness/op_breakdown.cpp), and a
// PyTorch peer's Kineto trace (bench/run/peers.cpp). A breakdown that could
// not be taken holds only its source, why (unavailable) and valid = false.
#pragma once

#include <array>
#include <map>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "profiler/common/fields.h"

namespace ladder::profiler {

enum class Category {
  kGemm,
  kAttention,
  kElementwiseNorm,
  kSoftmaxLoss,
  kOptimizer,
  kCommunication,
  kMemcpyMemset,
  kIdleOther,
};
inline constexpr size_t kCategoryCount = 8;
// JSON key of a category: "gemm", "attention", "elementwise_norm", "softmax_loss",
// "optimizer", "communication", "memcpy_memset", "idle_other".
const char* category_key(Category c);

// One value per category, written as an object keyed by category_key.
template <class T>
struct PerCategory {
  std::array<T, kCategoryCount> values{};
  T& operator[](Category c) { return values[size_t(c)]; }
  const T& operator[](Category c) const { return values[size_t(c)]; }
  // The values by category key, as the JSON has them.
  std::map<std::string, T> by_key() const {
    std::map<std::string, T> out;
    for (size_t i = 0; i < kCategoryCount; ++i) out[category_key(Category(i))] = values[i];
    return out;
  }
  template <class S, class V>
  static void fields(S& s, V& v) {
    for (size_t i = 0; i < kCategoryCount; ++i) {
      if constexpr (std::is_arithmetic_v<T>) {
        v(category_key(Category(i)), s.values[i], ::ladder::fields::Doc().min(0));
      } else {
        v(category_key(Category(i)), s.values[i]);
      }
    }
  }
};

// An operator or kernel and its time per step (other_top).
struct NamedMs {
  std::string name;
  double ms = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("name", s.name);
    v("ms", s.ms);
  }
};

// One of a category's largest operators or kernels (top_by_category).
struct NamedTotal {
  std::string name;
  double ms = 0, calls = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("name", s.name, Doc("the operator (CPU) or kernel (CUDA, demangled, without its parameters, at most 160 "
                          "characters)"));
    v("ms", s.ms, Doc("its own time per step").min(0));
    v("calls", s.calls, Doc("calls (or kernel runs) per step").min(0));
  }
};

// One kernel (CUDA) or operator (CPU) of the profiled steps (kernels): the
// whole table, from which `ladder compare --kernels` matches families.
struct KernelRow {
  std::string name, band;
  double ms = 0, calls = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("name", s.name,
      Doc("the whole name: an operator (CPU), or a kernel demangled without its parameter list (CUDA); never cut"));
    v("band", s.band, Doc("the category its time counts in (a key of categories_ms)"));
    v("ms", s.ms, Doc("its own time per step").min(0));
    v("calls", s.calls, Doc("calls (or kernel runs) per step").min(0));
  }
};

// Time per phase of a step, from the trace's own timestamps: on a CPU the
// operators inside each phase's range, on the thread that ran the step; on
// CUDA the device activities launched while each phase was open.
struct PhasesMs {
  double data = 0, forward = 0, backward = 0, optimizer = 0, communication = 0, outside = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("data", s.data, Doc("inside the data ranges").min(0));
    v("forward", s.forward, Doc("inside the forward ranges").min(0));
    v("backward", s.backward, Doc("inside the backward ranges, communication left out").min(0));
    v("optimizer", s.optimizer, Doc("inside the optimizer range, communication left out").min(0));
    v("communication", s.communication,
      Doc("inside a collective or an all-reduce bucket or ZeRO-1 gather range, in any phase").min(0));
    v("outside", s.outside, Doc("in the step but in no phase's range (the step's own code)").min(0));
  }
  double in_phases() const { return data + forward + backward + optimizer + communication; }
  PhasesMs& operator+=(const PhasesMs& o) {
    data += o.data, forward += o.forward, backward += o.backward, optimizer += o.optimizer;
    communication += o.communication, outside += o.outside;
    return *this;
  }
  PhasesMs& operator/=(double n) {
    data /= n, forward /= n, backward /= n, optimizer /= n, communication /= n, outside /= n;
    return *this;
  }
};

// The device (or the operators) cannot be busy longer than the step took.
struct BusyInvariantSection {
  std::string rule;
  double busy_ms = 0, step_dt_ms = 0, slack_pct = 0;
  bool holds = false;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("rule", s.rule);
    v("busy_ms", s.busy_ms, Doc().min(0));
    v("step_dt_ms", s.step_dt_ms, Doc().min(0));
    v("slack_pct", s.slack_pct, Doc().min(0));
    v("holds", s.holds);
  }
};

struct CuptiClock {
  double ticks_per_ns = 0;
  std::string note;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("ticks_per_ns", s.ticks_per_ns, ::ladder::fields::Doc().above(0));
    v("note", s.note);
  }
};

// How many operators and kernels one step ran (the report's op_counts).
struct OpCounts {
  int64_t cpu_ops_per_step = 0, cuda_kernels_per_step = 0, cuda_memcpy_memset_per_step = 0;
  std::string source;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("cpu_ops_per_step", s.cpu_ops_per_step, Doc("aten:: operators per step").min(0));
    v("cuda_kernels_per_step", s.cuda_kernels_per_step, Doc().min(0));
    v("cuda_memcpy_memset_per_step", s.cuda_memcpy_memset_per_step, Doc().min(0));
    v("source", s.source);
  }
};

struct OpBreakdownSection {
  template <class T>
  using Maybe = ::ladder::fields::Maybe<T>;
  std::string source;
  std::optional<std::string> unavailable;
  Maybe<int64_t> steps_profiled, dropped_records, duplicate_records_removed;
  Maybe<double> step_dt_ms, sum_ms, sum_pct_of_dt, span_ms, idle_ms, other_ms, overlap_ms, busy_ms;
  Maybe<PerCategory<double>> categories_ms, categories_pct_of_dt;
  Maybe<std::vector<NamedMs>> other_top;
  Maybe<PerCategory<std::vector<NamedTotal>>> top_by_category;
  Maybe<std::vector<KernelRow>> kernels;
  Maybe<PhasesMs> phases_ms;
  Maybe<double> phases_pct_of_busy;
  Maybe<std::map<std::string, double>> layers_ms;
  Maybe<double> ops_per_step, kernel_launches_per_step, memcpy_memset_per_step, graph_launches_per_step;
  Maybe<bool> valid;
  Maybe<std::optional<std::string>> invalid_reason;
  Maybe<BusyInvariantSection> invariant;
  Maybe<CuptiClock> clock;
  Maybe<std::string> trace;
  Maybe<std::string> test_slow_op;

  // A breakdown that could not be taken, and why.
  static OpBreakdownSection unavailable_from(const std::string& source, const std::string& why);

  template <class S, class V>
  static void fields(S& s, V& v);
};

template <class S, class V>
void OpBreakdownSection::fields(S& s, V& v) {
  using Doc = ::ladder::fields::Doc;
  v("source", s.source, "what was classified: 'kineto: CPU operators' or 'cupti: CUDA kernels'");
  v("unavailable", s.unavailable,
    "why there is no breakdown (e.g. 'no CUDA device: kernel activity unavailable'), or null");
  v("steps_profiled", s.steps_profiled, Doc("extra steps after the measured ones, run under the collector").min(0));
  v("step_dt_ms", s.step_dt_ms, Doc("the harness's mean dt of the profiled steps").min(0));
  v("categories_ms", s.categories_ms, "mean ms per step in each category; idle_other = idle_ms + other_ms");
  v("categories_pct_of_dt", s.categories_pct_of_dt, "categories_ms as % of step_dt_ms");
  v("sum_ms", s.sum_ms, Doc("sum of categories_ms: the step span (host), plus overlap_ms (device)").min(0));
  v("sum_pct_of_dt", s.sum_pct_of_dt, Doc("sum_ms as % of step_dt_ms").min(0));
  v("span_ms", s.span_ms,
    Doc("the step as the trace saw it (ProfilerStep#N on CPU; first launch to device idle on CUDA)").min(0));
  v("idle_ms", s.idle_ms, Doc("host: time in no operator; device: time with no kernel, memcpy or memset").min(0));
  v("other_ms", s.other_ms, Doc("operators or kernels matching no category").min(0));
  v("overlap_ms", s.overlap_ms, Doc("device: activity beyond its union (concurrent streams); 0 on host").min(0));
  v("other_top", s.other_top, "the largest contributors to other_ms");
  v("top_by_category", s.top_by_category,
    "per category, its largest operators or kernels by time per step (at most 8, largest first): which kernels "
    "make up a band of the breakdown");
  v("kernels", s.kernels,
    "every operator (CPU, its own time) or kernel, memcpy and memset (CUDA) of the profiled steps, largest first: "
    "the whole table that top_by_category samples");
  v("phases_ms", s.phases_ms,
    "mean ms per step in each phase, nothing synchronised: on a CPU the operators inside its ranges in the trace; "
    "on CUDA the device time of what was launched while the phase was open (CUPTI's launch records; a CUDA graph's "
    "kernels in the phase their replay was launched in)");
  v("phases_pct_of_busy", s.phases_pct_of_busy,
    Doc("the phases (outside left out) as % of busy_ms on a CPU, of the activities' summed time on CUDA: how "
        "much of the step's work they account for").min(0));
  v("layers_ms", s.layers_ms,
    Doc("with --layer-ranges: mean ms per step inside each layer's range, by phase and layer ('forward/layer 3')")
        .min(0));
  v("ops_per_step", s.ops_per_step, Doc("CPU: aten:: operators per step").min(0));
  v("kernel_launches_per_step", s.kernel_launches_per_step,
    Doc("CUDA: kernels run per step (graph replays included)").min(0));
  v("memcpy_memset_per_step", s.memcpy_memset_per_step, Doc("CUDA: memcpy and memset activities per step").min(0));
  v("graph_launches_per_step", s.graph_launches_per_step, Doc("CUDA: cudaGraphLaunch calls per step").min(0));
  v("dropped_records", s.dropped_records, Doc("CUPTI records lost to full buffers").min(0));
  v("busy_ms", s.busy_ms,
    Doc("per step: time in top-level operators (CPU) or the union of device activity (CUDA)").min(0));
  v("valid", s.valid, "false when the breakdown is unavailable or its invariant does not hold");
  v("invalid_reason", s.invalid_reason, "why valid is false, or null");
  v("invariant", s.invariant, "the device (or the operators) cannot be busy longer than the step took");
  v("duplicate_records_removed", s.duplicate_records_removed,
    Doc("CUDA: activity records delivered more than once, counted once").min(0));
  v("clock", s.clock, "CUDA: how CUPTI timestamps were converted to ns");
  v("test_slow_op", s.test_slow_op,
    "test-only LADDER_TEST_SLOW_OP=OPERATOR:P: every call of that operator was made P % longer; absent when unset");
  v("trace", s.trace,
    "peers: the Kineto trace of the profiled steps the breakdown was read from (scripts/peer.py writes it beside "
    "the report)");
}

inline OpBreakdownSection OpBreakdownSection::unavailable_from(const std::string& source, const std::string& why) {
  OpBreakdownSection s;
  s.source = source;
  s.unavailable = why;
  s.valid = false;
  s.invalid_reason = std::optional<std::string>(why);
  return s;
}

}  // namespace ladder::profiler
