// profiler/common/cpu_model.cpp: see cpu_model.h.
#include "profiler/common/cpu_model.h"

#include <fstream>

namespace ladder {

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    const auto start = colon == std::string::npos ? colon : line.find_first_not_of(' ', colon + 1);
    if (start != std::string::npos) return line.substr(start);
  }
  return "unknown CPU";
}

}  // namespace ladder
