// bench/measure/device/cpu_caches.cpp: see cpu_caches.h.
#include "bench/measure/device/cpu_caches.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace ladder {

std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return f ? line : "";
}

namespace {
// "32K" -> 32768 (sysfs cache sizes).
int64_t size_bytes(const std::string& s) {
  if (s.empty()) return -1;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  const int64_t unit = *end == 'K' ? 1024 : *end == 'M' ? 1024 * 1024 : *end == 'G' ? 1024ll << 20 : 1;
  return int64_t(v) * unit;
}

// How many CPUs a "0-3,8" list names.
int count_cpus(const std::string& list) {
  int n = 0;
  std::stringstream ss(list);
  std::string part;
  while (std::getline(ss, part, ',')) {
    const auto dash = part.find('-');
    n += dash == std::string::npos ? 1 : std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
  }
  return n;
}
}  // namespace

std::vector<CpuCache> cpu0_caches() {
  std::vector<CpuCache> caches;
  for (int i = 0;; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    const std::string level = read_first_line(dir + "level");
    if (level.empty()) break;
    const int64_t size = size_bytes(read_first_line(dir + "size"));
    const std::string shared = read_first_line(dir + "shared_cpu_list");
    if (size < 0 || shared.empty()) continue;
    caches.push_back({read_first_line(dir + "type"), std::stoi(level), size, count_cpus(shared)});
  }
  return caches;
}

}  // namespace ladder
