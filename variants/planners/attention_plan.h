// variants/planners/attention_plan.h: which scaled_dot_product_attention backend the
// flash rung's causal attention runs, chosen by measurement or pinned by the
// user, as the GEMM sites are (variants/planners/gemm_plan.h).
//
// The candidates, forward and backward at the step's shape (B, nh, T, hs)
// and dtype:
//   A  pytorch     SDPA as PyTorch picks (its heuristic: cuDNN's kernels on
//                  an H100 with torch 2.11, the one whose kernel it is
//                  named in `picks`)
//   B  flash       SDPA with only the flash backend enabled
//   C  cudnn       only cuDNN's (CUDA only)
//   D  efficient   only the memory-efficient (CUTLASS) backend (CUDA only)
//   E  math        only SDPA's math backend (CPU only: on a CPU it computes
//                  bf16 in fp32, where the bf16 flash kernel can be 3x
//                  slower)
//   F  explicit    the rungs' own explicit attention (two batched matmuls,
//                  the mask, the softmax) in the step's dtype (CPU only)
//   G  flash-fp32  the flash kernel on fp32 copies of bf16 q, k, v, its
//                  output cast back (CPU only; bf16 steps only)
// The CPU's SDPA has two backends, flash and math, and PyTorch's pick is
// flash at every shape the rungs run: without E-G the CPU planner had two
// names for one kernel. A candidate that cannot run at the shape (its
// error) or has nothing of its own to run is recorded as not run, with why.
// The planner times them interleaved (plan_common.h) and keeps A unless
// another is faster by more than the margin: 3 % on CUDA (CUDA events), 5 %
// on a CPU (the wall clock); every candidate that ran records why it lost
// (`verdict`). The plan goes into the report (every candidate's times, what
// A picks, the library versions), is cached per device, library versions,
// dtype and shape, and can be pinned:
// --attention-plan auto|pytorch|flash|cudnn|efficient|math|explicit|flash-fp32.
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
#include "variants/config/precision_name.h"

namespace ladder {

enum class AttentionBackend : uint8_t { kPytorch, kFlash, kCudnn, kEfficient, kMath, kExplicit, kFlashFp32 };
// Every backend, PyTorch's choice (A) first: what the planner tries, in this order.
inline constexpr AttentionBackend kAttentionBackends[] = {
    AttentionBackend::kPytorch, AttentionBackend::kFlash,    AttentionBackend::kCudnn,    AttentionBackend::kEfficient,
    AttentionBackend::kMath,    AttentionBackend::kExplicit, AttentionBackend::kFlashFp32};
// "pytorch", "flash", "cudnn", "efficient", "math", "explicit", "flash-fp32"
const char* backend_name(AttentionBackend b);
std::optional<AttentionBackend> parse_backend(std::string_view name);
// Every backend's name, in kAttentionBackends' order (the schema's one_of).
std::vector<std::string> backend_names();
// Whether the planner offers `b` on this kind of device: cuDNN's and the
// memory-efficient backend are CUDA's; math, explicit and flash-fp32 a CPU's;
// both have PyTorch's pick and flash.
bool backend_on_device(AttentionBackend b, bool cuda);
// "CUDA only" or "CPU only": why `b` is not offered where backend_on_device is false.
const char* backend_device_only(AttentionBackend b);

inline constexpr int kAttentionPlannerVersion = 4;  // 2: math, explicit and flash-fp32 on a CPU; 3: explicit is one node there; 4: its softmax takes one exp a score

// What a plan was measured for: a cached plan is used only where every
// field matches. The device and library fields are the GEMM plan's
// (GemmPlanKey), with cuDNN's version beside them, and the attention's shape.
struct AttentionPlanKey {
  std::string device;  // "NVIDIA H100 80GB HBM3", "cpu"
  std::string torch;   // LibTorch's version
  std::string cudnn;   // cuDNN's version ("" without CUDA)
  std::string dtype;   // precision_name(): bf16, fp32 or tf32
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
    v("dtype", s.dtype, Doc("the attention's dtype").one_of(precision_names()));
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
  bool ran = false;        // false: not available here, or not timed (why_not)
  std::string why_not;
  std::vector<double> ms;  // each timed repetition, in order
  double median_ms = 0;
  fields::Maybe<std::string> verdict;  // "chosen", or why it lost, with the figures; absent when it did not run

  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("backend", s.backend, Doc("the candidate").one_of(fields::values_of(backend_names())));
    v("picks", s.picks, Doc("the SDPA backend that runs: for pytorch, the one PyTorch's heuristic picks"));
    v("ran", s.ran, Doc("false: the backend cannot run here, or was not timed (why_not)"));
    v("why_not", s.why_not, Doc("why it did not run; empty when it ran"));
    v("ms", s.ms, Doc("each timed repetition of forward and backward, in the order timed, ms").min(0));
    v("median_ms", s.median_ms, Doc("their median, ms").min(0));
    v("verdict", s.verdict, Doc("chosen, or why it lost, with the figures; absent when it did not run (a plan "
                                "before planner 2 has none)"));
  }
};

// --attention-plan's values: "auto", then backend_names().
std::vector<std::string> attention_plan_values();

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
    v("mode", s.mode, Doc("--attention-plan").one_of(fields::values_of(attention_plan_values())));
    v("source", s.source, Doc("measured, cache: PATH, or pinned"));
    v("key", s.key, Doc("what the plan was measured for"));
    v("choice", s.choice, Doc("the backend the step runs").one_of(fields::values_of(backend_names())));
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
// On a CPU a candidate whose untimed run took more than this many times A's
// is not timed (ran false, why_not saying so): explicit attention in
// emulated bf16 at T 1024 runs for seconds, and ten of them would hold the
// step for minutes to lose. 0: every candidate is timed (CUDA, where a first
// call may build a plan or a graph).
inline constexpr double kAttentionPlanFirstRunCutCpu = 4.0;

// One candidate as the planner gets it: its result so far (backend, picks,
// ran, why_not) and a call that runs it once (forward and backward).
struct RunnableAttention {
  AttentionCandidate result;
  std::function<void()> run;
};
// Runs `fn` once and returns its time in ms (CUDA events on a GPU).
using AttentionTimer = std::function<double(const std::function<void()>&)>;

// The measured plan: every candidate that ran is run once untimed (and left
// out, past `first_run_cut` times A's untimed run when that is > 0), then
// timed `reps` times interleaved; the choice by the planners' rule
// (plan_common.h: choose_fastest; candidates[0] must be A and have run),
// and each candidate's verdict. mode "auto", source "measured".
AttentionPlan measure_attention_plan(std::vector<RunnableAttention> candidates, const AttentionPlanKey& key,
                                     const AttentionTimer& timer, double margin, int reps = kAttentionPlanReps,
                                     double first_run_cut = 0);

// --attention-plan: throws ConfigError unless auto or a backend's name, and
// for a backend not offered on `device` ("cpu", "cuda:0": backend_on_device).
void check_attention_plan_request(const std::string& value, const std::string& device = "cuda");
// The plan that pins `backend` (mode: its name), not measured.
AttentionPlan pinned_attention_plan(const AttentionPlanKey& key, AttentionBackend backend);

// The cache: plan_cache_dir("attention-plans"), one file per key id.
std::optional<AttentionPlan> load_cached_attention_plan(const AttentionPlanKey& key);  // nullopt: none, unreadable, another key
void save_cached_attention_plan(const AttentionPlan& plan);  // atomically; a failure is not fatal

}  // namespace ladder
