// variants/attention_plan.cpp: see attention_plan.h.
#include "variants/attention_plan.h"

#include <chrono>

#include <fmt/format.h>

#include "profiler/common/config_error.h"
#include "variants/plan_common.h"

namespace ladder {

const char* backend_name(AttentionBackend b) {
  switch (b) {
    case AttentionBackend::kPytorch: return "pytorch";
    case AttentionBackend::kFlash: return "flash";
    case AttentionBackend::kCudnn: return "cudnn";
    case AttentionBackend::kEfficient: return "efficient";
  }
  return "?";
}

std::optional<AttentionBackend> parse_backend(std::string_view name) {
  for (AttentionBackend b : kAttentionBackends)
    if (name == backend_name(b)) return b;
  return std::nullopt;
}

bool backend_on_device(AttentionBackend b, bool cuda) {
  return cuda || b == AttentionBackend::kPytorch || b == AttentionBackend::kFlash;
}

std::string AttentionPlanKey::id() const { return plan_key_id(device, fields::to_json(*this).dump()); }

bool AttentionPlanKey::operator==(const AttentionPlanKey& o) const {
  return fields::to_json(*this) == fields::to_json(o);
}

AttentionBackend AttentionPlan::backend() const {
  const auto b = parse_backend(choice);
  if (!b) throw ConfigError(fmt::format("attention plan: choice is \"{}\"; expected pytorch, flash, cudnn or efficient",
                                        choice));
  return *b;
}

AttentionPlan measure_attention_plan(std::vector<RunnableAttention> candidates, const AttentionPlanKey& key,
                                     const AttentionTimer& timer, double margin, int reps) {
  const auto t0 = std::chrono::steady_clock::now();
  AttentionPlan p;
  p.mode = "auto";
  p.source = "measured";
  p.key = key;
  p.margin = margin;
  p.reps = reps;
  for (auto& c : candidates) {
    if (c.result.ran) c.run();  // untimed: the backend's first call (its plan, cuDNN's graph build)
    p.candidates.push_back(c.result);
  }
  time_interleaved(p.candidates, reps, [&](size_t i) { return timer(candidates[i].run); });
  const size_t best = choose_fastest(p.candidates, margin, &p.reason,
                                     [](const AttentionCandidate& c) { return c.backend; });
  p.choice = p.candidates[best].backend;
  p.planning_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

void check_attention_plan_request(const std::string& value, const std::string& device) {
  if (value == "auto") return;
  const auto b = parse_backend(value);
  if (!b)
    throw ConfigError(fmt::format("--attention-plan: got \"{}\"; expected auto, pytorch, flash, cudnn or efficient",
                                  value));
  if (!backend_on_device(*b, device.rfind("cuda", 0) == 0))
    throw ConfigError(fmt::format("--attention-plan: {} is a CUDA backend and --device is {}; expected auto, "
                                  "pytorch or flash there", value, device));
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
