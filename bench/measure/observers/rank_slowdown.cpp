// bench/measure/observers/rank_slowdown.cpp: see rank_slowdown.h.
#include "bench/measure/observers/rank_slowdown.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <string>

#include <fmt/format.h>

#include "profiler/common/config_error.h"
#include "profiler/ranges/range.h"

namespace ladder {

std::optional<SlowRankSpec> test_slow_rank(int world_size) {
  const char* v = std::getenv(kTestSlowRankEnv);
  if (!v || !*v) return std::nullopt;
  const std::string spec = v;
  const size_t colon = spec.find(':');
  SlowRankSpec s;
  char* end = nullptr;
  const std::string rank = spec.substr(0, colon);
  const long r = std::strtol(rank.c_str(), &end, 10);
  const bool rank_ok = !rank.empty() && *end == '\0' && r >= 0;
  bool pct_ok = false;
  if (colon != std::string::npos) {
    const std::string pct = spec.substr(colon + 1);
    s.pct = std::strtod(pct.c_str(), &end);
    pct_ok = !pct.empty() && *end == '\0' && s.pct >= 0 && s.pct <= 1000;
  }
  if (!rank_ok || !pct_ok)
    throw ConfigError(fmt::format("{}: got '{}', expected RANK:P with RANK a rank of the job and P a percentage in "
                                  "[0, 1000] (e.g. 1:20)",
                                  kTestSlowRankEnv, spec));
  if (r >= world_size)
    throw ConfigError(fmt::format("{}={}: no rank {} in a job of {} rank(s); expected 0 to {}", kTestSlowRankEnv, spec,
                                  r, world_size, world_size - 1));
  s.rank = int(r);
  return s;
}

void RankSlowdown::step_begins(int64_t) {
  begin_ = Clock::now();
  forwards_ = 0;
  waited_ms_ = 0;
}

namespace {
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}
}  // namespace

void RankSlowdown::phase_ends(Phase p) {
  if (p != Phase::kForward) return;
  ++forwards_;
  if (recent_ms_.empty() || pct_ <= 0) return;
  profiler::ScopedRange range("test slowdown");
  const auto t0 = Clock::now();
  const double recent = *std::min_element(recent_ms_.begin(), recent_ms_.end());
  const double until = thread_cpu_ms() + recent * pct_ / 100.0 / last_forwards_;
  while (thread_cpu_ms() < until) {
  }
  waited_ms_ += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void RankSlowdown::step_ends(int64_t) {
  recent_ms_.push_back(std::chrono::duration<double, std::milli>(Clock::now() - begin_).count() - waited_ms_);
  if (recent_ms_.size() > 3) recent_ms_.erase(recent_ms_.begin());
  last_forwards_ = std::max(forwards_, 1);
}

}  // namespace ladder
