// profiler/trace/schedule.h: the trace schedule `--profile wait,warmup,active[,repeat]`.
//
// torch.profiler.schedule's semantics, counted over the run's steps from 0
// (warmup steps included): each cycle waits `wait` steps, warms the profiler
// up for `warmup` steps (started, events discarded), records `active` steps
// and writes one trace at the cycle's last active step. `repeat` cycles are
// run (0: cycles repeat until the run ends; default 1). Parsing validates
// against the run's length, as torchtitan checks its profile_freq: a schedule
// whose first trace would come after the last step is refused.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "profiler/common/fields.h"

namespace ladder::profiler {

enum class ProfilerAction { kNone, kWarmup, kRecord, kRecordAndSave };

struct ProfileSchedule {
  int64_t wait = 0;
  int64_t warmup = 0;
  int64_t active = 1;
  int64_t repeat = 1;  // 0: until the run ends

  int64_t cycle() const { return wait + warmup + active; }
  ProfilerAction action(int64_t step) const;

  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("wait", s.wait, Doc().min(0));
    v("warmup", s.warmup, Doc().min(0));
    v("active", s.active, Doc().min(0));
    v("repeat", s.repeat, Doc("0: until the run ends").min(0));
  }
};

// Parses "wait,warmup,active[,repeat]" for a run of `total_steps` steps.
// Throws ConfigError naming `option`, the value and what is expected.
ProfileSchedule parse_schedule(const std::string& spec, int64_t total_steps,
                               const char* option = "--profile");

void to_json(nlohmann::json& j, const ProfileSchedule& s);

}  // namespace ladder::profiler
