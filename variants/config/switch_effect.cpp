// variants/config/switch_effect.cpp: the entries a switch's describe() returns.
#include "variants/config/switch_effect.h"

#include <utility>

namespace ladder {

SwitchEffect SwitchEffect::on(bool effective, std::string mechanism, std::string reason) {
  SwitchEffect e;
  e.enabled = true;
  e.effective = effective;
  e.mechanism = std::move(mechanism);
  e.reason = std::move(reason);
  return e;
}

SwitchEffect SwitchEffect::cannot_act(std::string mechanism, std::string reason) {
  SwitchEffect e = on(false, std::move(mechanism), std::move(reason));
  e.applicable = false;
  return e;
}

SwitchEffect SwitchEffect::off(std::string reason) {
  SwitchEffect e;
  e.reason = std::move(reason);
  return e;
}

bool took_effect(const SwitchEffects& effects, const std::string& name) {
  const auto it = effects.find(name);
  return it != effects.end() && it->second.took_effect();
}

void SwitchEffect::schema_extra(nlohmann::json& schema) {
  schema["if"] = {{"properties", {{"enabled", {{"const", true}}}}}};
  schema["then"] = {{"required", {"effective", "mechanism"}}};
}

}  // namespace ladder
