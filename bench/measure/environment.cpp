// bench/measure/environment.cpp: see environment.h.
#include "bench/measure/environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include "bench/measure/cpu_caches.h"
#include "bench/measure/device.h"
#include "build_info.h"

namespace ladder {

std::string host_name() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

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
  for (const CpuCache& c : cpu0_caches())
    caches.push_back({{"type", c.type}, {"level", c.level}, {"size", c.size_bytes}, {"num_sharing", c.num_sharing}});
  if (!caches.empty()) j["caches"] = caches;
  {
    std::ifstream f("/proc/loadavg");
    double a = 0, b = 0, c = 0;
    if (f >> a >> b >> c) j["load_avg"] = {a, b, c};
  }
  const std::string governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
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
