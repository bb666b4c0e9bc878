// variants/config/switch_decl.cpp: every switch, in ladder order
// (switch_decl.h). The list itself is generated: CMake globs
// variants/switches/, and each file `<name>.cpp` there (but registry.cpp) defines
// `ladder::switches::<name>`, which build/generated/switch_list.cpp collects
// into declared_switches(). A new switch is one new file; nothing here or
// elsewhere lists it.
#include "variants/config/switch_decl.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

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
  if (all.size() > kMaxSwitches)
    throw std::logic_error(fmt::format("{} switches are declared; Switches holds at most {}", all.size(),
                                       kMaxSwitches));
  const SwitchDecl* peers_base = nullptr;
  for (const SwitchDecl* s : all) {
    if (!names.insert(s->name).second) fail(*s, "its name is declared twice");
    if (s->peers_base && s->role != SwitchRole::kRung) fail(*s, "peers_base names a rung of the ladder; this is none");
    if (s->peers_base && peers_base) fail(*s, fmt::format("'{}' declares peers_base too", peers_base->name));
    if (s->peers_base) peers_base = s;
    if (s->memory_mode && s->role != SwitchRole::kExtra) fail(*s, "memory_mode is for an extra; this is none");
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
  if (!all.empty() && !peers_base)
    throw std::logic_error("no switch declares peers_base (variants/switches/): the peers need a rung to reproduce");
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

const char* numerics_name(Numerics n) {
  switch (n) {
    case Numerics::kTf32: return "tf32";
    case Numerics::kBf16: return "bf16";
    case Numerics::kFp32Exact: break;
  }
  return "fp32-exact";
}

}  // namespace ladder
