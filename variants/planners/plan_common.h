// variants/planners/plan_common.h: what the step's two planners share, the GEMM plan
// (variants/planners/gemm_plan.h) and the attention plan (variants/planners/attention_plan.h):
// how candidates are timed (interleaved, the median of each), the rule that
// keeps PyTorch's own way unless another is faster by more than a margin,
// and where plans are cached. Device-free.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ladder {

double median_of(std::vector<double> v);

// Times each candidate that ran (`c.ran`) `reps` times, interleaved:
// repetition r runs them in the order rotated by r, so no candidate always
// follows the same one. `time_ms(i)` runs candidate i once and returns its
// time; each candidate gets every time (`c.ms`) and their median (`c.median_ms`).
template <class Candidate>
void time_interleaved(std::vector<Candidate>& results, int reps, const std::function<double(size_t)>& time_ms) {
  std::vector<size_t> ran;
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].ran) ran.push_back(i);
  for (int r = 0; r < reps; ++r)
    for (size_t j = 0; j < ran.size(); ++j) {
      const size_t i = ran[(j + size_t(r)) % ran.size()];
      results[i].ms.push_back(time_ms(i));
    }
  for (size_t i : ran) results[i].median_ms = median_of(results[i].ms);
}

// The index of the candidate to keep among `c` (c[0] is PyTorch's own way,
// and ran): the fastest that ran, if its median is below c[0]'s by more than
// `margin`; else 0. `reason` says which and by how much, each candidate named
// by `label(c[i])`.
template <class Candidate, class Label>
size_t choose_fastest(const std::vector<Candidate>& c, double margin, std::string* reason, const Label& label) {
  if (c.empty() || !c[0].ran) throw std::logic_error("choose_fastest: the first candidate must be PyTorch's, measured");
  size_t best = 0;
  for (size_t i = 1; i < c.size(); ++i)
    if (c[i].ran && c[i].median_ms < c[best].median_ms) best = i;
  const double a = c[0].median_ms, b = c[best].median_ms;
  const bool replaces = best != 0 && b < a * (1.0 - margin);
  if (reason) {
    if (best == 0)
      *reason = fmt::format("{} kept: fastest ({:.4f} ms)", label(c[0]), a);
    else
      *reason = fmt::format("{} {}: {:.4f} ms against {}'s {:.4f} ms ({:+.1f} %, margin {:.0f} %)", label(c[best]),
                            replaces ? "chosen" : "not chosen, within the margin", b, label(c[0]), a,
                            100.0 * (b / a - 1.0), 100.0 * margin);
  }
  return replaces ? best : 0;
}

// A plan cache's folder: $LADDER_CACHE/<kind>, else
// $XDG_CACHE_HOME/ladder/<kind>, else ~/.cache/ladder/<kind>
// (kind: "gemm-plans", "attention-plans").
// A measured plan (GemmPlan, AttentionPlan): its mode ("auto"), source
// ("measured"), key, margin and repetitions set, filled by measure(plan),
// then the time all that took (planning_ms).
template <class Plan, class Key, class Measure>
Plan measured_plan(const Key& key, double margin, int reps, const Measure& measure) {
  const auto t0 = std::chrono::steady_clock::now();
  Plan p;
  p.mode = "auto";
  p.source = "measured";
  p.key = key;
  p.margin = margin;
  p.reps = reps;
  measure(p);
  p.planning_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

std::filesystem::path plan_cache_dir(const std::string& kind);
// A cached plan's file name: "<device, as a slug>-<16 hex digits of the key's JSON's hash>".
std::string plan_key_id(const std::string& device, const std::string& key_json);

// The plan cached for `key` in plan_cache_dir(kind), read by `parse(json,
// path)` (which throws on what it refuses), its source "cache: PATH";
// nullopt where there is none, it is damaged (measured again) or it holds
// another key (a hash collision, an edited file).
template <class Plan, class Key, class Parse>
std::optional<Plan> load_cached_plan_of(const std::string& kind, const Key& key, const Parse& parse) {
  const auto path = plan_cache_dir(kind) / (key.id() + ".json");
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    Plan p = parse(nlohmann::json::parse(in), path.string());
    if (!(p.key == key)) return std::nullopt;
    p.source = "cache: " + path.string();
    return p;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}
// Writes `plan` as plan_cache_dir(kind)/<id>.json, atomically; a failure (a
// read-only home) is not fatal: the plan is still in the report, and the
// next run measures again.
void save_cached_plan_of(const std::string& kind, const std::string& id, const nlohmann::json& plan);

}  // namespace ladder
