// variants/switches/registry.cpp: the plan the switches make (switch.h): each
// switch that is on applies itself to the step's plan; and the table of them.
// The list itself is variants/config/switch_decl.cpp's.
#include "variants/switches/switch.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "profiler/common/config_error.h"
#include "variants/config/config.h"

namespace ladder {

void StepPlan::stand_down(const SwitchDecl& s, std::string why) {
  acting.set(s, false);
  stood_down[s.name] = std::move(why);
}

StepPlan plan_for(const RunConfig& cfg) {
  StepPlan plan;
  plan.model.linear.lt_epilogues = plan.model.linear.gelu_epilogue = false;  // each its own switch
  for (const SwitchDecl* s : all_switches()) {
    if (s->role == SwitchRole::kGroup || !cfg.sw.on(*s)) continue;
    plan.acting.set(*s, true);
    if (s->apply) s->apply(cfg, plan);
  }
  return plan;
}

}  // namespace ladder

namespace ladder {

namespace {
std::string role_text(const SwitchDecl& s) {
  switch (s.role) {
    case SwitchRole::kRung: return "rung";
    case SwitchRole::kGroup: return "rung, a group";
    case SwitchRole::kPart: return fmt::format("part of `{}`", s.group->name);
    case SwitchRole::kExtra: break;
  }
  return "extra";
}
}  // namespace

std::string switches_markdown() {
  std::string out =
      "| switch | role | what it changes | numerics | needs | acts on |\n"
      "|---|---|---|---|---|---|\n";
  for (const SwitchDecl* s : all_switches()) {
    std::string needs;
    for (const SwitchDecl* n : s->needs)
      if (n) needs += fmt::format("{}`{}`", needs.empty() ? "" : ", ", n->name);
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", s->name, role_text(*s),
                       s->what, s->role != SwitchRole::kGroup ? numerics_name(s->numerics) : "its parts'", needs,
                       s->cuda_only ? "CUDA" : "CPU, CUDA");
  }
  return out;
}

}  // namespace ladder
