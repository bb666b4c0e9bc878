// bench/measure/observers/op_slowdown.cpp: see op_slowdown.h.
#include "bench/measure/observers/op_slowdown.h"

#include <time.h>

#include <chrono>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <utility>

#include <ATen/record_function.h>
#include <fmt/format.h>

#include "profiler/common/config_error.h"

namespace ladder {

namespace {

using Clock = std::chrono::steady_clock;

// The thread's CPU time in ns. The spin is P % of the call's CPU time, not of
// its wall time: a VM's host can stop the vCPU for milliseconds (steal) or
// the guest can run another process, and a spin scaled from wall time would
// multiply that pause by P too (at 1000 % a 2 ms pause inside aten::gelu
// became 22 ms on the slowed side). Time the thread did not run is not its
// CPU time, so the operator grows by P % of its own work alone.
int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The one slowed operator ("" for none) and its share; the callbacks are
// plain functions.
SlowOpSpec& active() {
  static SlowOpSpec spec;
  return spec;
}

// When the outermost call of the operator on this thread began, and how deep
// its calls nest (an operator may call itself).
thread_local int64_t began_cpu_ns = 0;
thread_local int depth = 0;

bool is_slowed(const at::RecordFunction& fn) {
  return active().op[0] != '\0' && std::strcmp(fn.name(), active().op.data()) == 0;
}

std::unique_ptr<at::ObserverContext> on_begin(const at::RecordFunction& fn) {
  if (is_slowed(fn) && depth++ == 0) began_cpu_ns = thread_cpu_ns();
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (!is_slowed(fn) || depth == 0 || --depth > 0) return;
  const auto spin = std::chrono::nanoseconds(
      static_cast<int64_t>(static_cast<double>(thread_cpu_ns() - began_cpu_ns) * (active().pct / 100.0)));
  const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(spin);
  while (Clock::now() < until) {
  }
}

}  // namespace

std::string SlowOpSpec::text() const { return fmt::format("{}:{}", op.data(), pct); }

std::optional<SlowOpSpec> test_slow_op() {
  const char* v = std::getenv(kTestSlowOpEnv);
  if (!v || !*v) return std::nullopt;
  const std::string spec = v;
  const size_t colon = spec.rfind(':');
  SlowOpSpec s;
  bool ok = colon != std::string::npos && colon > 0 && spec[colon - 1] != ':' && colon < s.op.size();
  if (ok) {
    spec.copy(s.op.data(), colon);
    s.op[colon] = '\0';
    const std::string pct = spec.substr(colon + 1);
    char* end = nullptr;
    s.pct = std::strtod(pct.c_str(), &end);
    ok = !pct.empty() && *end == '\0' && s.pct > 0 && s.pct <= 1000;
  }
  if (!ok)
    throw ConfigError(fmt::format("{}: got '{}', expected OPERATOR:P with OPERATOR as the profiler names it (at most "
                                  "{} characters) and P a percentage in (0, 1000] (e.g. aten::gelu:50)",
                                  kTestSlowOpEnv, spec, s.op.size() - 1));
  return s;
}

OpSlowdown::OpSlowdown(const std::optional<SlowOpSpec>& spec) {
  active() = spec.value_or(SlowOpSpec{});
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_begin, on_end).scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

OpSlowdown::~OpSlowdown() { at::removeCallback(handle_); }

}  // namespace ladder
