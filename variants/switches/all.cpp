// variants/switches/all.cpp: every switch, in ladder order, and the plan
// they make. A new switch is one file in this folder and one line here.
#include "variants/switches/switch.h"

#include <stdexcept>

#include <fmt/format.h>

#include "variants/config.h"

namespace ladder {

namespace switches {
extern const SwitchDecl kTf32, kBf16, kFused, kFusedLn, kFusedLinear, kLtEpilogues, kGeluEpilogue, kFusedCe,
    kFlatGrads, kCudaGraph, kAdamwClip, kFlash, kVocabPad, kFusedAdamw, kGradAccum, kDdp;
}  // namespace switches

const std::vector<const SwitchDecl*>& all_switches() {
  using namespace switches;
  static const std::vector<const SwitchDecl*> kAll = {
      &kTf32, &kBf16,
      &kFused, &kFusedLn, &kFusedLinear, &kLtEpilogues, &kGeluEpilogue, &kFusedCe, &kFlatGrads, &kCudaGraph, &kAdamwClip,
      &kFlash, &kVocabPad, &kFusedAdamw, &kGradAccum, &kDdp,
  };
  return kAll;
}

const SwitchDecl* find_switch(const std::string& name) {
  for (const SwitchDecl* s : all_switches())
    if (name == s->name) return s;
  return nullptr;
}

const SwitchDecl& switch_named(const std::string& name) {
  const SwitchDecl* s = find_switch(name);
  if (!s) throw std::logic_error("no switch is declared as '" + name + "' (variants/switches/all.cpp)");
  return *s;
}

std::vector<const SwitchDecl*> parts_of(const SwitchDecl& group) {
  std::vector<const SwitchDecl*> parts;
  for (const SwitchDecl* s : all_switches())
    if (s->group && std::string(s->group) == group.name) parts.push_back(s);
  return parts;
}

StepPlan plan_for(const RunConfig& cfg) {
  StepPlan plan;
  plan.model.linear.lt_epilogues = plan.model.linear.gelu_epilogue = false;  // each its own switch
  for (const SwitchDecl* s : all_switches())
    if (s->member && cfg.sw.*s->member && s->apply) s->apply(cfg, plan);
  return plan;
}

nlohmann::json switch_effect(bool effective, const std::string& mechanism, const std::string& reason) {
  return {{"enabled", true}, {"effective", effective}, {"mechanism", mechanism}, {"reason", reason}};
}

}  // namespace ladder

namespace ladder {

const char* numerics_name(Numerics n) {
  switch (n) {
    case Numerics::kTf32: return "tf32";
    case Numerics::kBf16: return "bf16";
    case Numerics::kFp32Exact: break;
  }
  return "fp32-exact";
}

std::string switches_markdown() {
  std::string out =
      "| switch | group | what it changes | numerics | needs | acts on |\n"
      "|---|---|---|---|---|---|\n";
  for (const SwitchDecl* s : all_switches()) {
    std::string needs;
    for (const char* n : s->needs)
      if (n) needs += fmt::format("{}`{}`", needs.empty() ? "" : ", ", n);
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", s->name, s->group ? fmt::format("`{}`", s->group) : "",
                       s->what, s->member ? numerics_name(s->numerics) : "its parts'", needs,
                       s->cuda_only ? "CUDA" : "CPU, CUDA");
  }
  return out;
}

}  // namespace ladder
