// bench/measure/device/environment.cpp: see environment.h.
#include "bench/measure/device/environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include "bench/measure/device/cpu_caches.h"
#include "bench/measure/device/device.h"
#include "build_info.h"

namespace ladder {

std::string host_name() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

CpuHost describe_cpu_host() {
  CpuHost h;
  {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("cpu MHz", 0) == 0 && line.find(':') != std::string::npos) {
        h.mhz_per_cpu = int64_t(std::lround(std::stod(line.substr(line.find(':') + 1))));
        break;
      }
  }
  std::vector<CpuCacheFacts> caches;
  for (const CpuCache& c : cpu0_caches()) caches.push_back({c.type, c.level, c.size_bytes, c.num_sharing});
  if (!caches.empty()) h.caches = caches;
  {
    std::ifstream f("/proc/loadavg");
    double a = 0, b = 0, c = 0;
    if (f >> a >> b >> c) h.load_avg = std::vector<double>{a, b, c};
  }
  const std::string governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  if (!governor.empty()) h.cpu_scaling_enabled = governor != "performance";
  return h;
}

EnvironmentSection describe_environment(const torch::Device& device) {
  utsname u{};
  uname(&u);
  const auto cpu = describe_device(torch::Device(torch::kCPU));
  const auto dev = describe_device(device);
  EnvironmentSection e;
  e.host = host_name();
  e.os = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  e.cpu_model = cpu.name;
  e.cpu_logical_cores = cpu.logical_cores.value_or(0);
  e.cpu_capability = at::get_cpu_capability();
  e.threads = {int64_t(at::get_num_threads()), int64_t(at::get_num_interop_threads())};
  e.device = dev;
  LibraryVersions& v = e.versions;
  v.libtorch = TORCH_VERSION;
  if (build_info::kCudaToolkitVersion[0]) v.cuda_toolkit_at_build = std::string(build_info::kCudaToolkitVersion);
  // A version the device named, or null (a CPU, a library not loaded).
  v.cuda_runtime = dev.cuda_runtime_version;
  v.cuda_driver = dev.driver_cuda_version;
  v.cudnn = dev.cudnn_version.value_or(std::nullopt);
  v.nccl = dev.nccl_version;
  v.cublaslt = std::optional<int64_t>(dev.cublaslt_version);
  v.mkldnn = at::get_mkldnn_version();
  v.openmp = at::get_openmp_version();
  e.compiler = build_info::kCompiler;
  e.build_type = build_info::kBuildType;
  e.cpu_host = describe_cpu_host();
  return e;
}

}  // namespace ladder
