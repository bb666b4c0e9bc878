// bench/measure/device/device.cpp: CPU implementations and CUDA dispatch (see device.h).
#include "bench/measure/device/device.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/measure/device/cpu_allocator.h"
#include "bench/measure/device/cpu_caches.h"
#include "profiler/common/cpu_model.h"
#include "variants/config/config.h"
#ifdef LADDER_WITH_CUDA
#include "bench/measure/device/device_cuda.h"
#endif

namespace ladder {

bool cuda_available() { return torch::cuda::is_available(); }

std::string default_device_spec() { return cuda_available() ? "cuda" : "cpu"; }

torch::Device parse_device(const std::string& spec) {
  static const std::regex kPattern(R"(cpu|cuda(:[0-9]+)?)");
  if (!std::regex_match(spec, kPattern))
    throw ConfigError(
        fmt::format("--device: '{}' is not a device; expected cpu, cuda or cuda:N", spec));
  torch::Device device(spec);
  if (device.is_cuda()) {
#ifndef LADDER_WITH_CUDA
    throw ConfigError(fmt::format(
        "--device {}: this build of ladder has no CUDA support (LibTorch without CUDA or no "
        "toolkit at configure time); use --device cpu",
        spec));
#endif
    const int64_t count = cuda_available() ? int64_t(torch::cuda::device_count()) : 0;
    if (count == 0)
      throw ConfigError(fmt::format(
          "--device {}: no CUDA device is visible to LibTorch on this machine; use --device cpu",
          spec));
    if (device.has_index() && device.index() >= count)
      throw ConfigError(fmt::format("--device {}: only {} CUDA device(s), expected cuda:0..cuda:{}",
                                    spec, count, count - 1));
    if (!device.has_index()) device = torch::Device(torch::kCUDA, 0);
  }
  return device;
}

void synchronize(const torch::Device& device) {
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) cuda::synchronize(device.index());
#endif
  // CPU ops are synchronous: nothing to wait for.
}

namespace {
class ClockTimer final : public StepTimer {
 public:
  void start() override { t0_ = std::chrono::steady_clock::now(); }
  void stop() override { t1_ = std::chrono::steady_clock::now(); }
  double elapsed_ms() override {
    return std::chrono::duration<double, std::milli>(t1_ - t0_).count();
  }
  const char* method() const override { return "steady_clock"; }

 private:
  std::chrono::steady_clock::time_point t0_, t1_;
};

// Reads a "Key:   1234 kB" line from /proc/self/status, in bytes; -1 if absent.
int64_t proc_status_bytes(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
  }
  return -1;
}

int64_t physical_memory_bytes() {
  return int64_t(sysconf(_SC_PHYS_PAGES)) * int64_t(sysconf(_SC_PAGE_SIZE));
}

}  // namespace

std::unique_ptr<StepTimer> make_step_timer(const torch::Device& device) {
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) return cuda::make_event_timer(device.index());
#endif
  return std::make_unique<ClockTimer>();
}

BestTime best_time(StepTimer& timer, const std::function<void()>& op, int min_reps, double min_seconds,
                   int max_reps) {
  BestTime t;
  t.best_ms = std::numeric_limits<double>::infinity();
  const auto wall0 = std::chrono::steady_clock::now();
  while (true) {
    timer.start();
    op();
    timer.stop();
    t.best_ms = std::min(t.best_ms, timer.elapsed_ms());
    ++t.reps;
    t.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall0).count();
    if ((t.reps >= min_reps && t.wall_ms >= min_seconds * 1e3) || t.reps >= max_reps) return t;
  }
}

namespace {
// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0).
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return bool(f);
}
}  // namespace

void release_cached_memory(const torch::Device& device) {
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) cuda::release_cached_memory(device.index());
#endif
}

bool reset_memory_peaks(const torch::Device& device) {
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) cuda::reset_memory_peaks(device.index());
#endif
  if (!device.is_cuda()) reset_cpu_allocated_peak();
  return reset_peak_rss();
}

bool reset_peak_memory(const torch::Device& device) {
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) cuda::reset_peak_stats(device.index());
#endif
  if (!device.is_cuda()) reset_cpu_allocated_peak();
  return reset_peak_rss();
}

MemoryStats read_memory(const torch::Device& device) {
  MemoryStats m;
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) m = cuda::read_memory(device.index());
#endif
  int64_t hwm = proc_status_bytes("VmHWM");
  if (hwm < 0) {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    hwm = int64_t(ru.ru_maxrss) * 1024;
  }
  m.peak_rss_bytes = hwm;
  if (!device.is_cuda()) {
    m.device_total_bytes = physical_memory_bytes();
    const CpuAllocated a = cpu_allocated();
    m.cpu_counting = a.counting;
    if (a.counting) m.peak_allocated_bytes = a.peak_bytes;  // live tensor storage, as CUDA's allocated
  }
  return m;
}

int64_t device_memory_bytes(const torch::Device& device) {
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) return cuda::total_memory(device.has_index() ? device.index() : 0);
#endif
  return physical_memory_bytes();
}

int64_t last_level_cache_bytes(const torch::Device& device) {
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) return cuda::l2_cache_bytes(device.has_index() ? device.index() : 0);
#endif
  int64_t bytes = 0;
  int level = 0;
  for (const CpuCache& c : cpu0_caches())
    if (c.level >= level && c.type != "Instruction") {
      level = c.level;
      bytes = c.size_bytes;
    }
  return bytes;
}

std::string device_name(const torch::Device& device) {
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) return cuda::name(device.index());
#endif
  return cpu_model_name();
}

std::optional<GpuSnapshot> gpu_state(const torch::Device& device) {
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) return cuda::gpu_state(device.has_index() ? device.index() : 0);
#endif
  return std::nullopt;
}

DeviceDescription describe_device(const torch::Device& device) {
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) return cuda::describe(device.index());
#endif
  DeviceDescription d;
  d.kind = "cpu";
  d.name = cpu_model_name();
  d.count = 1;
  d.logical_cores = int64_t(sysconf(_SC_NPROCESSORS_ONLN));
  d.memory_bytes = physical_memory_bytes();
  return d;
}

}  // namespace ladder
