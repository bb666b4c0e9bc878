// bench/measure/environment.cpp: see environment.h.
#include "bench/measure/environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include "bench/measure/device.h"
#include "build_info.h"

namespace ladder {

std::string host_name() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

namespace {
std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return f ? line : "";
}

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

nlohmann::json describe_cpu_host() {
  nlohmann::json j = nlohmann::json::object();
  {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("cpu MHz", 0) == 0 && line.find(':') != std::string::npos) {
        j["mhz_per_cpu"] = int64_t(std::lround(std::stod(line.substr(line.find(':') + 1))));
        break;
      }
  }
  nlohmann::json caches = nlohmann::json::array();
  for (int i = 0;; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    const std::string level = read_line(dir + "level");
    if (level.empty()) break;
    const int64_t size = size_bytes(read_line(dir + "size"));
    const std::string shared = read_line(dir + "shared_cpu_list");
    if (size < 0 || shared.empty()) continue;
    caches.push_back({{"type", read_line(dir + "type")}, {"level", std::stoi(level)}, {"size", size},
                      {"num_sharing", count_cpus(shared)}});
  }
  if (!caches.empty()) j["caches"] = caches;
  {
    std::ifstream f("/proc/loadavg");
    double a = 0, b = 0, c = 0;
    if (f >> a >> b >> c) j["load_avg"] = {a, b, c};
  }
  const std::string governor = read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  if (!governor.empty()) j["cpu_scaling_enabled"] = governor != "performance";
  return j;
}

nlohmann::json describe_environment(const torch::Device& device) {
  const std::string host = host_name();
  utsname u{};
  uname(&u);
  auto cpu = describe_device(torch::Device(torch::kCPU));
  auto dev = describe_device(device);
  auto from_device = [&](const char* key) { return dev.contains(key) ? dev[key] : nlohmann::json(); };
  nlohmann::json versions = {
      {"libtorch", TORCH_VERSION},
      {"cuda_toolkit_at_build",
       build_info::kCudaToolkitVersion[0] ? nlohmann::json(build_info::kCudaToolkitVersion)
                                          : nlohmann::json()},
      {"cuda_runtime", from_device("cuda_runtime_version")},
      {"cuda_driver", from_device("driver_cuda_version")},
      {"cudnn", from_device("cudnn_version")},
      {"nccl", from_device("nccl_version")},
      {"cublaslt", from_device("cublaslt_version")},
      {"mkldnn", at::get_mkldnn_version()},
      {"openmp", at::get_openmp_version()},
  };
  nlohmann::json j = {
      {"host", host},
      {"os", fmt::format("{} {} {}", u.sysname, u.release, u.machine)},
      {"cpu_model", cpu["name"]},
      {"cpu_logical_cores", cpu["logical_cores"]},
      {"cpu_capability", at::get_cpu_capability()},
      {"threads", {{"intra_op", at::get_num_threads()}, {"inter_op", at::get_num_interop_threads()}}},
      {"device", dev},
      {"versions", versions},
      {"compiler", build_info::kCompiler},
      {"build_type", build_info::kBuildType},
      {"cpu_host", describe_cpu_host()},
  };
  return j;
}

}  // namespace ladder
