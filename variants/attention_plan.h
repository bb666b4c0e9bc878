// variants/attention_plan.h: which scaled_dot_product_attention backend the
// flash rung's causal attention runs, chosen by measurement or pinned by the
// user, as the GEMM sites are (variants/gemm_plan.h).
//
// The candidates, forward and backward at the step's shape (B, nh, T, hs)
// and dtype:
//   A  pytorch    SDPA as PyTorch picks (its heuristic: cuDNN's kernels on
//                 an H100 with torch 2.11, the one whose kernel it is named
//                 in `picks`)
//   B  flash      SDPA with only the flash backend enabled
//   C  cudnn      only cuDNN's (CUDA only)
//   D  efficient  only the memory-efficient (CUTLASS) backend (CUDA only)
// A backend that cannot run at the shape (its error) is recorded as not
// run, with why. The planner times them interleaved (plan_common.h) and
// keeps A unless another is faster by more than the margin: 3 % on CUDA
// (CUDA events), 5 % on a CPU (the wall clock). The plan goes into the
// report (every candidate's times, what A picks, the library versions), is
// cached per device, library versions, dtype and shape, and can be pinned:
// --attention-plan auto|pytorch|flash|cudnn|efficient.
//
// This file is device-free (CPU-tested with a fake timer); the measuring and
// the backend switch are in attention_candidates.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/common/fields.h"

namespace ladder {

enum class AttentionBackend : uint8_t { kPytorch, kFlash, kCudnn, kEfficient };
// Every backend, PyTorch's choice (A) first: what the planner tries, in this order.
inline constexpr AttentionBackend kAttentionBackends[] = {AttentionBackend::kPytorch, AttentionBackend::kFlash,
                                                          AttentionBackend::kCudnn, AttentionBackend::kEfficient};
const char* backend_name(AttentionBackend b);  // "pytorch", "flash", "cudnn", "efficient"
std::optional<AttentionBackend> parse_backend(std::string_view name);
// Whether the planner offers `b` on this kind of device: cuDNN's and the
// memory-efficient backend are CUDA's; a CPU has PyTorch's pick and flash.
bool backend_on_device(AttentionBackend b, bool cuda);

inline constexpr int kAttentionPlannerVersion = 1;

// What a plan was measured for: a cached plan is used only where every
// field matches. The device and library fields are the GEMM plan's
// (GemmPlanKey), with cuDNN's version beside them, and the attention's shape.
struct AttentionPlanKey {
  std::string device;  // "NVIDIA H100 80GB HBM3", "cpu"
  std::string torch;   // LibTorch's version
  std::string cudnn;   // cuDNN's version ("" without CUDA)
  std::string dtype;   // "bf16", "fp32", "tf32"
  int64_t batch = 0, n_head = 0, seq = 0, head_size = 0;
  int64_t planner = kAttentionPlannerVersion;
  std::string id() const;  // a file name: "<device>-<16 hex digits of the fields' hash>"
  bool operator==(const AttentionPlanKey& o) const;

  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("device", s.device, Doc("the device the plan was measured on"));
    v("torch", s.torch, Doc("LibTorch's version"));
    v("cudnn", s.cudnn, Doc("cuDNN's version; empty without CUDA"));
    v("dtype", s.dtype, Doc("the attention's dtype").one_of({"bf16", "fp32", "tf32"}));
    v("batch", s.batch, Doc("B").min(1));
    v("n_head", s.n_head, Doc("heads").min(1));
    v("seq", s.seq, Doc("T").min(1));
    v("head_size", s.head_size, Doc("hs = n_embd / n_head").min(1));
    v("planner", s.planner, Doc("the planner's version; a cached plan of another is measured again").min(1));
  }
};

// One backend's measurement: forward and backward of the step's attention.
struct AttentionCandidate {
  std::string backend;     // backend_name
  std::string picks;       // the SDPA backend that runs ("cudnn", "flash", ...): for A, PyTorch's pick
  bool ran = false;        // false: not available here (why_not)
  std::string why_not;
  std::vector<double> ms;  // each timed repetition, in order
  double median_ms = 0;

  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("backend", s.backend, Doc("the candidate").one_of({"pytorch", "flash", "cudnn", "efficient"}));
    v("picks", s.picks, Doc("the SDPA backend that runs: for pytorch, the one PyTorch's heuristic picks"));
    v("ran", s.ran, Doc("false: the backend cannot run here (why_not)"));
    v("why_not", s.why_not, Doc("why it did not run; empty when it ran"));
    v("ms", s.ms, Doc("each timed repetition of forward and backward, in the order timed, ms").min(0));
    v("median_ms", s.median_ms, Doc("their median, ms").min(0));
  }
};

struct AttentionPlan {
  std::string mode = "pytorch";  // the --attention-plan it came from
  std::string source;            // "measured", "cache: PATH", "pinned"
  AttentionPlanKey key;
  std::string choice = "pytorch";  // backend_name of the backend the step runs
  std::string reason;              // why, with the figures
  double margin = 0;
  int64_t reps = 0;
  double planning_ms = 0;
  std::vector<AttentionCandidate> candidates;  // empty when not measured

  AttentionBackend backend() const;  // choice, parsed

  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("mode", s.mode, Doc("--attention-plan").one_of({"auto", "pytorch", "flash", "cudnn", "efficient"}));
    v("source", s.source, Doc("measured, cache: PATH, or pinned"));
    v("key", s.key, Doc("what the plan was measured for"));
    v("choice", s.choice, Doc("the backend the step runs").one_of({"pytorch", "flash", "cudnn", "efficient"}));
    v("reason", s.reason, Doc("why, with the figures"));
    v("margin", s.margin, Doc("a candidate replaces pytorch only when faster by more than this fraction").min(0));
    v("reps", s.reps, Doc("timed repetitions per candidate").min(0));
    v("planning_ms", s.planning_ms, Doc("wall time of the planning, ms").min(0));
    v("candidates", s.candidates, Doc("every candidate's times; empty when the plan was not measured"));
  }
};

inline constexpr double kAttentionPlanMargin = 0.03;     // as the GEMM plan's (kGemmPlanMargin)
inline constexpr double kAttentionPlanMarginCpu = 0.05;  // as kGemmPlanMarginCpu
inline constexpr int kAttentionPlanReps = 10;

// One candidate as the planner gets it: its result so far (backend, picks,
// ran, why_not) and a call that runs it once (forward and backward).
struct RunnableAttention {
  AttentionCandidate result;
  std::function<void()> run;
};
// Runs `fn` once and returns its time in ms (CUDA events on a GPU).
using AttentionTimer = std::function<double(const std::function<void()>&)>;

// The measured plan: every candidate that ran is run once untimed, then
// timed `reps` times interleaved; the choice by the planners' rule
// (plan_common.h: choose_fastest; candidates[0] must be A and have run).
// mode "auto", source "measured".
AttentionPlan measure_attention_plan(std::vector<RunnableAttention> candidates, const AttentionPlanKey& key,
                                     const AttentionTimer& timer, double margin, int reps = kAttentionPlanReps);

// --attention-plan: throws ConfigError unless auto, pytorch, flash, cudnn or
// efficient, and for cudnn or efficient where `device` ("cpu", "cuda:0") is
// not a CUDA device.
void check_attention_plan_request(const std::string& value, const std::string& device = "cuda");
// The plan that pins `backend` (mode: its name), not measured.
AttentionPlan pinned_attention_plan(const AttentionPlanKey& key, AttentionBackend backend);

// The cache: plan_cache_dir("attention-plans"), one file per key id.
std::optional<AttentionPlan> load_cached_attention_plan(const AttentionPlanKey& key);  // nullopt: none, unreadable, another key
void save_cached_attention_plan(const AttentionPlan& plan);  // atomically; a failure is not fatal

}  // namespace ladder
