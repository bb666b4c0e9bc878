// variants/config/switch_flags.cpp: which switches are on (switch_flags.h).
#include "variants/config/switch_flags.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profiler/common/config_error.h"

namespace ladder {

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

}  // namespace ladder
