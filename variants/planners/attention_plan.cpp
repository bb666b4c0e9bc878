// variants/planners/attention_plan.cpp: see attention_plan.h.
#include "variants/planners/attention_plan.h"

#include <chrono>

#include <fmt/format.h>

#include "profiler/common/config_error.h"
#include "variants/planners/plan_common.h"

namespace ladder {

const char* backend_name(AttentionBackend b) {
  switch (b) {
    case AttentionBackend::kPytorch: return "pytorch";
    case AttentionBackend::kFlash: return "flash";
    case AttentionBackend::kCudnn: return "cudnn";
    case AttentionBackend::kEfficient: return "efficient";
    case AttentionBackend::kMath: return "math";
    case AttentionBackend::kExplicit: return "explicit";
    case AttentionBackend::kFlashFp32: return "flash-fp32";
  }
  return "?";
}

std::vector<std::string> backend_names() {
  std::vector<std::string> v;
  for (AttentionBackend b : kAttentionBackends) v.emplace_back(backend_name(b));
  return v;
}

std::vector<std::string> attention_plan_values() {
  std::vector<std::string> v{"auto"};
  for (auto& name : backend_names()) v.push_back(std::move(name));
  return v;
}

namespace {
// "a, b or c"
std::string listed(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

// What --attention-plan takes on a CUDA device (`cuda`) or a CPU: auto, then the backends offered there.
std::string offered_on(bool cuda) {
  std::vector<std::string> names{"auto"};
  for (AttentionBackend b : kAttentionBackends)
    if (backend_on_device(b, cuda)) names.emplace_back(backend_name(b));
  return listed(names);
}
}  // namespace

std::optional<AttentionBackend> parse_backend(std::string_view name) {
  for (AttentionBackend b : kAttentionBackends)
    if (name == backend_name(b)) return b;
  return std::nullopt;
}

bool backend_on_device(AttentionBackend b, bool cuda) {
  switch (b) {
    case AttentionBackend::kPytorch:
    case AttentionBackend::kFlash: return true;
    case AttentionBackend::kCudnn:
    case AttentionBackend::kEfficient: return cuda;
    case AttentionBackend::kMath:
    case AttentionBackend::kExplicit:
    case AttentionBackend::kFlashFp32: return !cuda;
  }
  return false;
}

const char* backend_device_only(AttentionBackend b) { return backend_on_device(b, true) ? "CUDA only" : "CPU only"; }

std::string AttentionPlanKey::id() const { return plan_key_id(device, fields::to_json(*this).dump()); }

bool AttentionPlanKey::operator==(const AttentionPlanKey& o) const {
  return fields::to_json(*this) == fields::to_json(o);
}

AttentionBackend AttentionPlan::backend() const {
  const auto b = parse_backend(choice);
  if (!b)
    throw ConfigError(fmt::format("attention plan: choice is \"{}\"; expected {}", choice, listed(backend_names())));
  return *b;
}

AttentionPlan measure_attention_plan(std::vector<RunnableAttention> candidates, const AttentionPlanKey& key,
                                     const AttentionTimer& timer, double margin, int reps, double first_run_cut) {
  return measured_plan<AttentionPlan>(key, margin, reps, [&](AttentionPlan& p) {
    double a_first_ms = 0;
    for (auto& c : candidates) {
      if (c.result.ran) {  // untimed: the backend's first call (its plan, cuDNN's graph build)
        const double first_ms = timer(c.run);
        if (&c == &candidates.front()) a_first_ms = first_ms;
        if (first_run_cut > 0 && first_ms > first_run_cut * a_first_ms) {
          c.result.ran = false;
          c.result.why_not = fmt::format("not timed: its untimed run took {:.1f} ms, {:.1f}x {}'s {:.1f} ms (more than "
                                         "{:g}x)", first_ms, first_ms / a_first_ms, candidates.front().result.backend,
                                         a_first_ms, first_run_cut);
        }
      }
      p.candidates.push_back(c.result);
    }
    time_interleaved(p.candidates, reps, [&](size_t i) { return timer(candidates[i].run); });
    const size_t best = choose_fastest(p.candidates, margin, &p.reason,
                                       [](const AttentionCandidate& c) { return c.backend; });
    p.choice = p.candidates[best].backend;
    const AttentionCandidate& a = p.candidates[0];
    const AttentionCandidate& chosen = p.candidates[best];
    for (size_t i = 0; i < p.candidates.size(); ++i) {
      AttentionCandidate& c = p.candidates[i];
      if (!c.ran) continue;
      if (i == best)
        c.verdict = "chosen";
      else if (best == 0 && c.median_ms < a.median_ms)  // faster, not by the margin
        c.verdict = fmt::format("within the margin: {:.4f} ms against {}'s {:.4f} ms ({:+.1f} %, margin {:.0f} %)",
                                c.median_ms, a.backend, a.median_ms, 100.0 * (c.median_ms / a.median_ms - 1.0),
                                100.0 * margin);
      else
        c.verdict = fmt::format("slower: {:.4f} ms, {:.2f}x {}'s {:.4f} ms", c.median_ms,
                                c.median_ms / chosen.median_ms, chosen.backend, chosen.median_ms);
    }
  });
}

void check_attention_plan_request(const std::string& value, const std::string& device) {
  if (value == "auto") return;
  const auto b = parse_backend(value);
  if (!b)
    throw ConfigError(fmt::format("--attention-plan: got \"{}\"; expected {}", value, listed(attention_plan_values())));
  const bool cuda = device.rfind("cuda", 0) == 0;
  if (!backend_on_device(*b, cuda))
    throw ConfigError(fmt::format("--attention-plan: {} is a {} backend and --device is {}; expected {} there", value,
                                  cuda ? "CPU" : "CUDA", device, offered_on(cuda)));
}

AttentionPlan pinned_attention_plan(const AttentionPlanKey& key, AttentionBackend backend) {
  AttentionPlan p;
  p.mode = p.choice = backend_name(backend);
  p.source = "pinned";
  p.key = key;
  p.reason = fmt::format("--attention-plan {}", p.mode);
  return p;
}

std::optional<AttentionPlan> load_cached_attention_plan(const AttentionPlanKey& key) {
  return load_cached_plan_of<AttentionPlan>("attention-plans", key, [](const nlohmann::json& j, const std::string& at) {
    auto p = fields::from_json<AttentionPlan>(j, at);
    p.backend();  // a choice this build knows
    return p;
  });
}

void save_cached_attention_plan(const AttentionPlan& plan) {
  save_cached_plan_of("attention-plans", plan.key.id(), fields::to_json(plan));
}

}  // namespace ladder
