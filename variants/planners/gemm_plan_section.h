// variants/planners/gemm_plan_section.h: a GEMM plan as its JSON holds it (a rung
// report's gemm_plan, a plan file, a cached plan), as structs
// (profiler/common/fields.h): GemmPlan::to_json writes one, and its part of
// reports/rung_report.schema.json comes from the field lists below.
//
// GemmPlan (variants/planners/gemm_plan.h) is the plan the step runs: its choices are
// typed (GemmChoice, GemmRole). These structs are what it writes: the
// choice as its label, the site with its cuBLASLt shape. GemmPlan::from_json
// reads plan files back leniently, since those of planner 1 lack fields.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/common/fields.h"

namespace ladder {

// The schema's pattern of a choice's label: "pytorch", "onednn", "lt#2", ...
std::string gemm_choice_pattern();
// The roles' names, and the epilogues a site may name (plans of planner 2
// and before also named DGELU_BGRAD).
std::vector<nlohmann::json> gemm_role_names();
std::vector<nlohmann::json> gemm_epilogue_names();

struct GemmPlanKeySection {
  std::string device, cublaslt, torch, dtype;
  int64_t n_embd = 0, n_layer = 0, rows = 0;
  bool gelu_epilogue = false, into_grad = false;
  ::ladder::fields::Maybe<int64_t> planner, vocab;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("device", s.device);
    v("cublaslt", s.cublaslt);
    v("torch", s.torch);
    v("dtype", s.dtype);
    v("n_embd", s.n_embd);
    v("n_layer", s.n_layer);
    v("rows", s.rows);
    v("gelu_epilogue", s.gelu_epilogue);
    v("into_grad", s.into_grad);
    v("planner", s.planner,
      Doc("the planner's version (its candidates and how it times them); absent in plans of version 1").min(1));
    v("vocab", s.vocab, Doc("the classifier's vocabulary, in a CPU plan (its lm_head sites); absent on CUDA").min(1));
  }
};

struct GemmCandidateSection {
  std::string choice;
  bool ran = false;
  ::ladder::fields::Maybe<std::string> why_not;  // when it did not run
  ::ladder::fields::Maybe<double> median_ms;     // when it ran
  ::ladder::fields::Maybe<std::vector<double>> ms;
  ::ladder::fields::Maybe<nlohmann::json> algo;  // cuBLASLt's candidates only
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("choice", s.choice, Doc().matching(gemm_choice_pattern()));
    v("ran", s.ran);
    v("why_not", s.why_not);
    v("median_ms", s.median_ms, Doc().min(0));
    v("ms", s.ms, Doc().min(0));
    v("algo", s.algo,
      Doc("cuBLASLt's algorithm: rank in the heuristic's list, offered, algo_id, tile, stages, splitk, "
          "reduction_scheme, waves, workspace_bytes (needed), workspace_given")
          .shaped({{"type", {"object", "null"}}}));
  }
};

struct GemmSiteSection {
  std::string site, layer, role, epilogue;
  int64_t m = 0, n = 0, k = 0, rows = 0, in = 0, out = 0;
  ::ladder::fields::Maybe<bool> transa, transb;
  ::ladder::fields::Maybe<int64_t> per_step;
  std::string choice, reason;
  std::vector<GemmCandidateSection> candidates;
  template <class S, class V>
  static void fields(S& s, V& v);
};

struct GemmPlanSection {
  std::string mode, source;
  GemmPlanKeySection key;
  double margin = 0;
  int64_t reps = 0, workspace_bytes = 0;
  ::ladder::fields::Maybe<double> planning_ms;
  std::vector<GemmSiteSection> sites;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("mode", s.mode, Doc().one_of({"auto", "pytorch", "lt", "file"}));
    v("source", s.source);
    v("key", s.key);
    v("margin", s.margin, Doc().min(0));
    v("reps", s.reps, Doc().min(0));
    v("planning_ms", s.planning_ms, Doc().min(0));
    v("workspace_bytes", s.workspace_bytes, Doc().min(0));
    v("sites", s.sites);
  }
};

template <class S, class V>
void GemmSiteSection::fields(S& s, V& v) {
  using Doc = ::ladder::fields::Doc;
  v("site", s.site);
  v("layer", s.layer);
  v("role", s.role, Doc().one_of(gemm_role_names()));
  v("epilogue", s.epilogue,
    Doc("the site's cuBLASLt epilogue; DGELU_BGRAD in plans of planner 2 and before (c_proj's dgelu site also "
        "reduced c_fc's bias gradient), DGELU since; DEFAULT: none (a CPU plan's sites without one: the "
        "classifier's, the input gradients)")
        .one_of(gemm_epilogue_names()));
  v("m", s.m, Doc().min(1));
  v("n", s.n, Doc().min(1));
  v("k", s.k, Doc().min(1));
  v("transa", s.transa);
  v("transb", s.transb);
  v("rows", s.rows, Doc("the linear's rows N = B*T").min(1));
  v("in", s.in, Doc("the linear's input width I").min(1));
  v("out", s.out, Doc("the linear's output width O").min(1));
  v("per_step", s.per_step, Doc().min(0));
  v("choice", s.choice, Doc().matching(gemm_choice_pattern()));
  v("reason", s.reason);
  v("candidates", s.candidates);
}

}  // namespace ladder
