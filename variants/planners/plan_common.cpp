// variants/planners/plan_common.cpp: see plan_common.h.
#include "variants/planners/plan_common.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "profiler/common/atomic_file.h"

namespace ladder {

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? char(std::tolower(c)) : '-';
  out.erase(std::unique(out.begin(), out.end(), [](char a, char b) { return a == '-' && b == '-'; }), out.end());
  while (!out.empty() && out.back() == '-') out.pop_back();
  while (!out.empty() && out.front() == '-') out.erase(out.begin());
  return out.empty() ? "device" : out;
}

}  // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::filesystem::path plan_cache_dir(const std::string& kind) {
  if (const char* c = std::getenv("LADDER_CACHE"); c && *c) return std::filesystem::path(c) / kind;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "ladder" / kind;
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home && *home ? home : "/tmp") / ".cache" / "ladder" / kind;
}

std::string plan_key_id(const std::string& device, const std::string& key_json) {
  return fmt::format("{}-{:016x}", slug(device), fnv1a(key_json));
}

void save_cached_plan_of(const std::string& kind, const std::string& id, const nlohmann::json& plan) {
  try {
    const auto dir = plan_cache_dir(kind);
    std::filesystem::create_directories(dir);
    write_file_atomically((dir / (id + ".json")).string(), plan.dump(1) + "\n");
  } catch (const std::exception&) {
  }
}

}  // namespace ladder
