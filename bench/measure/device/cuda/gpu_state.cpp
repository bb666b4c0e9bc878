// bench/measure/device/cuda/gpu_state.cpp: the GPU's clocks, temperature, power and throttle
// reasons now, from NVML (bench/measure/device/device.h gpu_state). Only compiled with
// LADDER_WITH_CUDA.
//
// NVML is the driver's library (libnvidia-ml.so.1), not the toolkit's, and a
// machine that builds ladder may have no driver: it is opened at run time
// with dlopen, so the binary never depends on it, and where it is missing
// the state says so instead. The few entry points used are declared here
// from NVML's stable C API (types and constants as nvml.h defines them).
#include "bench/measure/device/device_cuda.h"

#include <dlfcn.h>

#include <array>
#include <mutex>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ladder::cuda {

namespace {

using NvmlReturn = int;        // nvmlReturn_t: 0 is NVML_SUCCESS
using NvmlDevice = void*;      // nvmlDevice_t
constexpr int kClockSm = 1;    // NVML_CLOCK_SM
constexpr int kTempGpu = 0;    // NVML_TEMPERATURE_GPU
// nvmlClocksEventReasons (formerly ...ThrottleReasons) bits, by name.
constexpr std::array<std::pair<unsigned long long, const char*>, 9> kReasons = {{
    {0x1, "gpu_idle"}, {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"}, {0x8, "hw_slowdown"},
    {0x10, "sync_boost"}, {0x20, "sw_thermal_slowdown"}, {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"}, {0x100, "display_clock_setting"},
}};

struct Nvml {
  std::string unavailable;  // why, when it cannot be used
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*by_pci)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*power)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*reasons)(NvmlDevice, unsigned long long*) = nullptr;
};

template <class F>
void bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

// Opened once per process; never closed (the driver's library stays loaded).
const Nvml& nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      n.unavailable = fmt::format("NVML not loaded: {}", dlerror());
      return;
    }
    bind(lib, "nvmlInit_v2", n.init);
    bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", n.by_pci);
    bind(lib, "nvmlDeviceGetClockInfo", n.clock);
    bind(lib, "nvmlDeviceGetTemperature", n.temperature);
    bind(lib, "nvmlDeviceGetPowerUsage", n.power);
    bind(lib, "nvmlDeviceGetCurrentClocksEventReasons", n.reasons);
    if (!n.reasons) bind(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", n.reasons);
    if (!n.init || !n.by_pci || !n.clock || !n.temperature || !n.power || !n.reasons)
      n.unavailable = "NVML lacks an entry point ladder reads (an old driver?)";
    else if (const NvmlReturn rc = n.init(); rc != 0)
      n.unavailable = fmt::format("nvmlInit_v2 returned {}", rc);
  });
  return n;
}

}  // namespace

GpuSnapshot gpu_state(int device_index) {
  GpuSnapshot s;
  const Nvml& n = nvml();
  if (!n.unavailable.empty()) {
    s.unavailable = n.unavailable;
    return s;
  }
  // NVML numbers devices its own way: find ours by its PCI bus id.
  char bus_id[32] = {0};
  if (cudaDeviceGetPCIBusId(bus_id, int(sizeof bus_id), device_index) != cudaSuccess) {
    s.unavailable = "cudaDeviceGetPCIBusId failed";
    return s;
  }
  NvmlDevice dev = nullptr;
  if (const NvmlReturn rc = n.by_pci(bus_id, &dev); rc != 0) {
    s.unavailable = fmt::format("nvmlDeviceGetHandleByPciBusId_v2({}) returned {}", bus_id, rc);
    return s;
  }
  unsigned sm_mhz = 0, temp_c = 0, power_mw = 0;
  unsigned long long reasons = 0;
  s.pci_bus_id = std::string(bus_id);
  s.sm_clock_mhz = n.clock(dev, kClockSm, &sm_mhz) == 0 ? std::optional<int64_t>(sm_mhz) : std::nullopt;
  s.temperature_c = n.temperature(dev, kTempGpu, &temp_c) == 0 ? std::optional<int64_t>(temp_c) : std::nullopt;
  s.power_w = n.power(dev, &power_mw) == 0 ? std::optional<double>(power_mw / 1000.0) : std::nullopt;
  std::optional<std::vector<std::string>> named;
  if (n.reasons(dev, &reasons) == 0) {
    named.emplace();
    for (const auto& [bit, name] : kReasons)
      if (reasons & bit) named->push_back(name);
  }
  s.throttle_reasons = named;
  return s;
}

}  // namespace ladder::cuda
