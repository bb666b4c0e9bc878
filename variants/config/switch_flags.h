// variants/config/switch_flags.h: which switches are on, keyed by declaration
// (switch_decl.h). The run's configuration holds them (config.h), so this and
// switch_flags.cpp include nothing that includes the configuration.
#pragma once

#include <bitset>
#include <cstddef>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "variants/config/switch_decl.h"

namespace ladder {

// Which switches are on: one flag per declared switch (variants/switches/),
// keyed by the declaration (its place in the list), so a new switch needs no
// field here. A group (fused) has no flag of its own: it is on when all its
// parts are.
class Switches {
 public:
  static constexpr size_t kMaxSwitches = ladder::kMaxSwitches;
  // By declaration (switches::ddp, variants/config/switch_symbols.h); names are
  // read only at the edges (find_switch / switch_named, switch_decl.h).
  bool on(const SwitchDecl& s) const;         // a group: all its parts on
  void set(const SwitchDecl& s, bool value);  // a group: all its parts
  size_t count() const { return flags_.count(); }  // flags on (groups not counted)
  bool operator==(const Switches& o) const { return flags_ == o.flags_; }
  bool operator!=(const Switches& o) const { return !(*this == o); }

 private:
  std::bitset<kMaxSwitches> flags_;  // by switch_index()
};

// The JSON form: every declared switch by name, a group as one more key;
// reports written before a group had parts name only the group.
void to_json(nlohmann::json& j, const Switches& s);
void from_json(const nlohmann::json& j, Switches& s);

}  // namespace ladder
