// profiler/trace/schedule.cpp: see schedule.h.
#include "profiler/trace/schedule.h"

#include <cerrno>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profiler/common/config_error.h"

namespace ladder::profiler {

ProfilerAction ProfileSchedule::action(int64_t step) const {
  if (step < 0) return ProfilerAction::kNone;
  if (repeat > 0 && step / cycle() >= repeat) return ProfilerAction::kNone;
  const int64_t m = step % cycle();
  if (m < wait) return ProfilerAction::kNone;
  if (m < wait + warmup) return ProfilerAction::kWarmup;
  return m < cycle() - 1 ? ProfilerAction::kRecord : ProfilerAction::kRecordAndSave;
}

ProfileSchedule parse_schedule(const std::string& spec, int64_t total_steps, const char* option) {
  const std::string expected = "expected wait,warmup,active[,repeat]: integers >= 0 with active >= 1, e.g. 1,1,2";
  // Split on every comma, keeping empty fields so "1,,2" is refused.
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = spec.find(',', start);
    fields.push_back(spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (fields.size() < 3 || fields.size() > 4)
    throw ConfigError(fmt::format("{}: '{}' has {} field(s); {}", option, spec, fields.size(), expected));
  static const char* kNames[] = {"wait", "warmup", "active", "repeat"};
  int64_t v[4] = {0, 0, 0, 1};
  for (size_t i = 0; i < fields.size(); ++i) {
    errno = 0;
    char* end = nullptr;
    const long long x = std::strtoll(fields[i].c_str(), &end, 10);
    if (fields[i].empty() || end != fields[i].c_str() + fields[i].size() || errno == ERANGE || x < 0)
      throw ConfigError(fmt::format("{}: '{}': {} is '{}'; {}", option, spec, kNames[i], fields[i], expected));
    v[i] = int64_t(x);
  }
  ProfileSchedule s{v[0], v[1], v[2], v[3]};
  if (s.active < 1)
    throw ConfigError(fmt::format("{}: '{}': active is 0; {}", option, spec, expected));
  if (s.cycle() > total_steps)
    throw ConfigError(fmt::format(
        "{}: '{}' writes its first trace at step {} (wait {} + warmup {} + active {} - 1), but the run "
        "has {} steps (warmup + measured, counted from 0); expected wait + warmup + active <= {}",
        option, spec, s.cycle() - 1, s.wait, s.warmup, s.active, total_steps, total_steps));
  return s;
}

void to_json(nlohmann::json& j, const ProfileSchedule& s) {
  j = fields::to_json(s);
}

}  // namespace ladder::profiler
