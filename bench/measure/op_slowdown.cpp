// bench/measure/op_slowdown.cpp: see op_slowdown.h.
#include "bench/measure/op_slowdown.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <utility>

#include <ATen/record_function.h>
#include <fmt/format.h>

#include "profiler/common/config_error.h"

namespace ladder {

namespace {

using Clock = std::chrono::steady_clock;

struct CallBegan : at::ObserverContext {
  explicit CallBegan(Clock::time_point t) : began(t) {}
  Clock::time_point began;
};

// The one slowed operator and its share (the callbacks are plain functions).
SlowOpSpec& active() {
  static SlowOpSpec spec;
  return spec;
}

std::unique_ptr<at::ObserverContext> on_begin(const at::RecordFunction& fn) {
  if (active().op != fn.name()) return nullptr;
  return std::make_unique<CallBegan>(Clock::now());
}

void on_end(const at::RecordFunction&, at::ObserverContext* ctx) {
  if (!ctx) return;
  const Clock::time_point began = static_cast<CallBegan*>(ctx)->began, now = Clock::now();
  const auto until = now + std::chrono::duration_cast<Clock::duration>((now - began) * (active().pct / 100.0));
  while (Clock::now() < until) {
  }
}

}  // namespace

std::string SlowOpSpec::text() const { return fmt::format("{}:{}", op, pct); }

std::optional<SlowOpSpec> test_slow_op() {
  const char* v = std::getenv(kTestSlowOpEnv);
  if (!v || !*v) return std::nullopt;
  const std::string spec = v;
  const size_t colon = spec.rfind(':');
  SlowOpSpec s;
  bool ok = colon != std::string::npos && colon > 0 && spec[colon - 1] != ':';
  if (ok) {
    s.op = spec.substr(0, colon);
    const std::string pct = spec.substr(colon + 1);
    char* end = nullptr;
    s.pct = std::strtod(pct.c_str(), &end);
    ok = !pct.empty() && *end == '\0' && s.pct > 0 && s.pct <= 1000;
  }
  if (!ok)
    throw ConfigError(fmt::format("{}: got '{}', expected OPERATOR:P with OPERATOR as the profiler names it and P a "
                                  "percentage in (0, 1000] (e.g. aten::gelu:50)",
                                  kTestSlowOpEnv, spec));
  return s;
}

OpSlowdown::OpSlowdown(SlowOpSpec spec) {
  active() = std::move(spec);
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_begin, on_end).scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

OpSlowdown::~OpSlowdown() { at::removeCallback(handle_); }

}  // namespace ladder
