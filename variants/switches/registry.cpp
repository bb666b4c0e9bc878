// variants/switches/registry.cpp: every switch, in ladder order, and the plan
// they make. The list itself is generated: CMake globs this folder, and each
// file `<name>.cpp` (but this one) defines `ladder::switches::<name>`, which
// build/generated/switch_list.cpp collects into declared_switches(). A new
// switch is one new file; nothing here or elsewhere lists it.
#include "variants/switches/switch.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "profiler/common/config_error.h"
#include "variants/config.h"

namespace ladder {

// build/generated/switch_list.cpp: the address of every declaration the glob
// found, in file-name order.
const std::vector<const SwitchDecl*>& declared_switches();

namespace {
// A declaration that the rest of ladder could not use is a programming error:
// named here, once, at the first use of the list.
void check_declarations(const std::vector<const SwitchDecl*>& all) {
  std::set<std::string> names;
  std::set<int> orders;
  auto fail = [](const SwitchDecl& s, const std::string& why) {
    throw std::logic_error(fmt::format("switch '{}' (variants/switches/): {}", s.name, why));
  };
  if (all.size() > Switches::kMaxSwitches)
    throw std::logic_error(fmt::format("{} switches are declared; Switches holds at most {}", all.size(),
                                       Switches::kMaxSwitches));
  for (const SwitchDecl* s : all) {
    if (!names.insert(s->name).second) fail(*s, "its name is declared twice");
    if (!orders.insert(s->order).second) fail(*s, fmt::format("order {} is taken by another switch", s->order));
    if ((s->role == SwitchRole::kPart) != (s->group != nullptr))
      fail(*s, "a part names its group, and only a part does");
  }
  for (const SwitchDecl* s : all) {
    const auto declared = [&](const SwitchDecl* d) { return std::find(all.begin(), all.end(), d) != all.end(); };
    if (s->group && !(declared(s->group) && s->group->role == SwitchRole::kGroup))
      fail(*s, fmt::format("its group '{}' is not a declared group", s->group->name));
    for (const SwitchDecl* need : s->needs)
      if (need && !declared(need)) fail(*s, fmt::format("it needs '{}', which is not declared", need->name));
  }
}
}  // namespace

const std::vector<const SwitchDecl*>& all_switches() {
  static const std::vector<const SwitchDecl*> kAll = [] {
    std::vector<const SwitchDecl*> all = declared_switches();
    std::sort(all.begin(), all.end(), [](const SwitchDecl* a, const SwitchDecl* b) { return a->order < b->order; });
    check_declarations(all);
    return all;
  }();
  return kAll;
}

size_t switch_index(const SwitchDecl& s) {
  const auto& all = all_switches();
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i] == &s) return i;
  throw std::logic_error(fmt::format("switch '{}' is not in the declared list", s.name));
}

bool Switches::on(const SwitchDecl& s) const {
  if (s.role != SwitchRole::kGroup) return flags_.test(switch_index(s));
  for (const SwitchDecl* part : parts_of(s))
    if (!on(*part)) return false;
  return true;
}

void Switches::set(const SwitchDecl& s, bool value) {
  if (s.role != SwitchRole::kGroup) {
    flags_.set(switch_index(s), value);
    return;
  }
  for (const SwitchDecl* part : parts_of(s)) set(*part, value);
}

void StepPlan::stand_down(const SwitchDecl& s, std::string why) {
  acting.set(s, false);
  stood_down[s.name] = std::move(why);
}

// Every declared switch by name; a group as one more key, true when all its
// parts are (what reports before the parts existed wrote).
void to_json(nlohmann::json& j, const Switches& s) {
  j = nlohmann::json::object();
  for (const SwitchDecl* info : all_switches()) j[info->name] = s.on(*info);
}

// Reports written before a group had parts carry only the group's flag: it
// sets every part. A switch missing from older reports is off.
void from_json(const nlohmann::json& j, Switches& s) {
  for (const SwitchDecl* info : all_switches()) {
    if (info->role != SwitchRole::kGroup) {
      if (j.contains(info->name)) s.set(*info, j.at(info->name).get<bool>());
      continue;
    }
    bool any_part = false;
    for (const SwitchDecl* part : parts_of(*info)) any_part = any_part || j.contains(part->name);
    if (!any_part && j.contains(info->name)) s.set(*info, j.at(info->name).get<bool>());
  }
  for (const auto& [key, value] : j.items()) {
    if (find_switch(key)) continue;
    std::string names;
    for (const SwitchDecl* info : all_switches()) names += fmt::format("{}{}", names.empty() ? "" : ", ", info->name);
    throw ConfigError(fmt::format("config.switches: unknown switch '{}'; expected: {}", key, names));
  }
}

const SwitchDecl* find_switch(const std::string& name) {
  for (const SwitchDecl* s : all_switches())
    if (name == s->name) return s;
  return nullptr;
}

const SwitchDecl& switch_named(const std::string& name) {
  const SwitchDecl* s = find_switch(name);
  if (!s) throw std::logic_error("no switch is declared as '" + name + "' (variants/switches/)");
  return *s;
}

std::vector<const SwitchDecl*> parts_of(const SwitchDecl& group) {
  std::vector<const SwitchDecl*> parts;
  for (const SwitchDecl* s : all_switches())
    if (s->group == &group) parts.push_back(s);
  return parts;
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
