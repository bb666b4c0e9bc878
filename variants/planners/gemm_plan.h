// variants/planners/gemm_plan.h: how each epilogue GEMM site of the step runs
// (variants/planners/gemm_sites.h), chosen by measurement or pinned by the user.
//
// Every site has candidates (variants/planners/gemm_candidates.h runs them):
//   A  pytorch        PyTorch's own ops: addmm or mm, then gelu, gelu_backward
//                     and sum, exactly what the unfused step runs
//   B  lt             cuBLASLt with the site's epilogue, one of the
//                     heuristic's algorithms (lt#R: the R-th it offers)
//   C  lt-split-bias  bias-gradient sites: cuBLASLt without the reduction
//                     epilogue (DEFAULT, DGELU), the bias gradient summed
//                     apart in fp32 (llm.c's way)
//   D  lt-into-grad   weight-gradient sites with flat-grads: dW accumulated
//                     (beta = 1) straight into the fp32 flat gradient buffer,
//                     the bias gradient in fp32 apart
//   E  lt-into-grad-bgradb  as D, the bias gradient by the BGRADB epilogue
//                     (in fp32) rather than apart
// On a CPU (every GEMM of the step a site: step_sites):
//   F  into-grad      weight-gradient sites with flat-grads, when the GEMM
//                     runs in fp32: dW accumulated (beta = 1) straight into
//                     the fp32 flat buffer by PyTorch's addmm_, no dW tensor
//                     and no add pass after it (the bias gradient apart)
//   G  onednn         the forward and input-gradient GEMMs by oneDNN's
//                     matmul (ATen's mkldnn::_linear_pointwise, the bias in
//                     its epilogue; the operands as they are, the weight
//                     read transposed for dx), where ATen's mm runs MKL's
//                     sgemm: 8-10 % faster at some of gpt2-124m's sites on a
//                     2-vCPU Xeon, slower at its weight gradients (so not
//                     offered there), 2026-11-29
// Each is timed as the step runs it: with flat-grads a weight gradient that
// comes back in bf16 (A, B, C) is then added into its fp32 buffer, and that
// add is part of the candidate's time (D and E need none).
// The planner times them interleaved (each repetition runs every candidate
// once, in a rotated order; the median of each) and keeps A unless another is
// faster by more than the margin: the step is then never slower than
// PyTorch's own GEMMs by more than the timing's noise. The plan is recorded
// in the report (every candidate's times and algorithm), cached per device,
// cuBLAS, torch and shape, and can be pinned: --gemm-plan auto|pytorch|lt|FILE
// (FILE: a plan file or a rung report.json holding one).
//
// The same code decides on both devices; only the candidates and the timer
// differ (CUDA events on a GPU, the wall clock on a CPU, whose margin is
// wider: kGemmPlanMarginCpu). This file is device-free (CPU-tested with a
// fake timer); the measuring is in gemm_candidates.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "variants/planners/gemm_plan_section.h"
#include "variants/planners/gemm_sites.h"

namespace ladder {

enum class GemmMethod : uint8_t { kPytorch, kLt, kLtSplitBias, kLtIntoGrad, kLtIntoGradBgradb, kIntoGrad, kOnednn };
// Every method, PyTorch's (A) first: what names parse to and what the
// planner tries (variants/planners/gemm_candidates.h), in this order.
inline constexpr GemmMethod kGemmMethods[] = {GemmMethod::kPytorch,    GemmMethod::kLt,
                                              GemmMethod::kLtSplitBias, GemmMethod::kLtIntoGrad,
                                              GemmMethod::kLtIntoGradBgradb, GemmMethod::kIntoGrad,
                                              GemmMethod::kOnednn};
// "pytorch", "lt", "lt-split-bias", "lt-into-grad", "lt-into-grad-bgradb",
// "into-grad", "onednn"
const char* method_name(GemmMethod m);
// Whether the planner offers `m` on this kind of device: cuBLASLt's (B-E) on
// CUDA, F and G on a CPU, A on both.
bool method_on_device(GemmMethod m, bool cuda);
std::optional<GemmMethod> parse_method(std::string_view name);

// One way to run one site: a method and, for cuBLASLt, the rank of the
// heuristic's algorithm.
struct GemmChoice {
  GemmMethod method = GemmMethod::kPytorch;
  int algo_rank = 0;
  bool uses_lt() const {
    return method != GemmMethod::kPytorch && method != GemmMethod::kIntoGrad && method != GemmMethod::kOnednn;
  }
  std::string label() const;  // "pytorch", "lt#2", "lt-split-bias#0"
  bool operator==(const GemmChoice& o) const { return method == o.method && algo_rank == o.algo_rank; }
};
// "pytorch", "lt#2", "lt-into-grad#0" ("lt" alone: rank 0); nullopt if malformed.
std::optional<GemmChoice> parse_choice(std::string_view label);

// Whether `method` can serve `role` at all (B: the epilogue roles; C: the
// weight-and-bias gradient; D and E: the same, with the flat buffer; F: any
// weight gradient, with the flat buffer; G: every GEMM, weight gradients
// included since planner 5).
bool method_applies(GemmMethod method, GemmRole role, bool into_grad_buffer);

// 5: G (oneDNN) is also offered at the weight gradients: on a Zen 5 EPYC,
// where ATen's fp32 mm runs MKL at 0.23 TFLOP/s, oneDNN's reaches 0.53.
inline constexpr int kGemmPlannerVersion = 5;

// One candidate's measurement at one site.
struct CandidateResult {
  GemmChoice choice;
  bool ran = false;        // false: not available here (why_not)
  std::string why_not;
  std::vector<double> ms;  // each timed repetition, in order
  double median_ms = 0;
  nlohmann::json algo;     // cuBLASLt's algorithm (id, tile, stages, split-K, waves, workspace); null for A
};

struct SitePlan {
  GemmSite site;
  GemmChoice choice;
  std::string reason;                      // why this choice, with the figures
  std::vector<CandidateResult> candidates;  // empty when the plan was not measured
};

// What a plan was measured for: a cached or pinned plan is used only where
// every field matches.
struct GemmPlanKey {
  std::string device;          // "NVIDIA H100 80GB HBM3", "cpu: <model>, <n> threads, <ISA in effect>"
  std::string cublaslt;        // cuBLASLt's version ("" without CUDA)
  std::string torch;           // LibTorch's version
  std::string dtype;           // the compute dtype, precision_name(): bf16, fp32 or tf32
  int64_t n_embd = 0, n_layer = 0, rows = 0;  // the sites' shapes
  int64_t vocab = 0;           // the classifier's (a CPU plan's lm_head sites); 0 and left out of the JSON on CUDA
  bool gelu_epilogue = true;   // c_fc's forward and c_proj's dgelu are epilogue sites
  bool into_grad = false;      // flat-grads: D and E apply
  // The planner's version: its sites, their candidates and how it times
  // them. A cached plan of another version is measured again; a plan file's
  // is read (an absent field: 1, the planner of 2026-11-27, which timed A, B
  // and C's weight gradients without the add into the buffer and had no E;
  // before 3, c_proj's dgelu site also reduced c_fc's bias gradient
  // (DGELU_BGRAD, or C's fp32 sum) and c_fc's weight gradient was no site;
  // before 4, a CPU had no G and ran its forward and input-gradient GEMMs
  // by ATen's mm whatever the plan).
  int planner = kGemmPlannerVersion;
  std::string id() const;      // a file name: "<device>-<16 hex digits of the fields' hash>"
  GemmPlanKeySection section() const;  // as the JSON holds it
  nlohmann::json to_json() const;
  static GemmPlanKey from_json(const nlohmann::json& j, const std::string& where);
  bool operator==(const GemmPlanKey& o) const { return to_json() == o.to_json(); }
};

struct GemmPlan {
  std::string mode = "pytorch";  // the --gemm-plan it came from: auto, pytorch, lt, file
  std::string source;            // "measured", "cache: PATH", "file: PATH", "pinned"
  GemmPlanKey key;
  double margin = 0;             // a candidate replaces A only when faster by more than this fraction
  int reps = 0;                  // timed repetitions per candidate
  double planning_ms = 0;        // wall time of the planning
  uint64_t workspace_bytes = 0;  // ladder's own cuBLASLt workspace the candidates ran with
  std::vector<SitePlan> sites;

  // The choice for a site (pytorch when the plan has no such site).
  GemmChoice choice_for(const std::string& layer, GemmRole role) const;
  GemmPlanSection section() const;  // as the JSON holds it: a report's gemm_plan
  nlohmann::json to_json() const;
  // Throws ConfigError naming `where` (a file), the field and what was expected.
  static GemmPlan from_json(const nlohmann::json& j, const std::string& where);
};

// {sites the plan runs on cuBLASLt, sites} among its GELU sites (c_fc's
// forward, c_proj's dgelu) or among the others: what lt-epilogues and
// gelu-epilogue say of themselves.
std::pair<int, int> lt_sites(const GemmPlan& p, bool gelu_roles);

// The margin the planner asks of a candidate over A: 3 %, about twice the
// spread of the median of 10 CUDA-event timings of one GEMM (1-1.5 % on the
// 2026-11-27 H100's gemm_sites runs), so that noise alone does not replace A.
inline constexpr double kGemmPlanMargin = 0.03;
// On a CPU, 5 %: the wall clock around a GEMM of 1-100 ms on a shared VM
// (the medians of 10 interleaved calls of one candidate moved by up to 3 %
// between planning runs on a 2-vCPU Xeon, 2026-11-29).
inline constexpr double kGemmPlanMarginCpu = 0.05;
inline constexpr int kGemmPlanReps = 10;  // the issue asks for a median of at least 10

// The index of the candidate to keep among `c` (c[0] must be A, and ran):
// the fastest that ran, if its median is below A's by more than `margin`;
// else A. `reason` says which and by how much.
size_t choose_candidate(const std::vector<CandidateResult>& c, double margin, std::string* reason);

// Times each candidate `reps` times, interleaved: repetition r runs them in
// the order rotated by r, so no candidate always follows the same one.
// `time_ms(i)` runs candidate i once and returns its time; the results get
// every time and their median.
void time_interleaved(std::vector<CandidateResult>& results, int reps, const std::function<double(size_t)>& time_ms);

// One candidate as the planner gets it: its result so far (ran, why_not,
// algo) and a call that runs it once, enqueued on the device.
struct RunnableCandidate {
  CandidateResult result;
  std::function<void()> run;
};
using CandidateSource = std::function<std::vector<RunnableCandidate>(const GemmSite&)>;
// Runs `fn` once and returns its time in ms (CUDA events on a GPU).
using CandidateTimer = std::function<double(const std::function<void()>&)>;

// The measured plan: for each site, its candidates from `source` (the first
// must be A and have run), each run once untimed, then timed `reps` times
// interleaved; the choice by choose_candidate. mode "auto", source "measured".
GemmPlan measure_plan(const std::vector<GemmSite>& sites, const GemmPlanKey& key, const CandidateSource& source,
                      const CandidateTimer& timer, double margin = kGemmPlanMargin, int reps = kGemmPlanReps);

// --gemm-plan: "auto" (measure, or a cached plan for the same key),
// "pytorch" (A everywhere), "lt" (B's first algorithm everywhere, as before
// the planner) or a FILE.
struct GemmPlanRequest {
  std::string mode = "auto";  // auto, pytorch, lt, file
  std::string file;           // mode == "file"
  GemmPlan plan;              // mode == "file": the plan the file holds, read once
};
// Throws ConfigError for a file that is missing or holds no plan.
GemmPlanRequest parse_gemm_plan_request(const std::string& value);
// A plan file or a report.json with a "gemm_plan" object; throws ConfigError.
GemmPlan read_gemm_plan_file(const std::string& path);

// The plan that pins every site of `sites` to one method (pytorch or lt).
GemmPlan pinned_plan(const std::vector<GemmSite>& sites, const GemmPlanKey& key, GemmMethod method,
                     const std::string& mode);
// A plan read from a file, for `key`: its sites' choices where the keys'
// shapes match; throws ConfigError (the file, the field, both values) where
// they do not. Another device or version is allowed (a reproduction), and said
// in source.
GemmPlan plan_from_file(const GemmPlan& file_plan, const std::string& path, const std::vector<GemmSite>& sites,
                        const GemmPlanKey& key);

// The plan cache: $LADDER_CACHE/gemm-plans, else $XDG_CACHE_HOME/ladder/gemm-plans,
// else ~/.cache/ladder/gemm-plans; one file per key id.
std::filesystem::path gemm_plan_cache_dir();
std::optional<GemmPlan> load_cached_plan(const GemmPlanKey& key);  // nullopt: none, unreadable or another key
void save_cached_plan(const GemmPlan& plan);                        // atomically; a failure is not fatal

}  // namespace ladder
