// bench/measure/roofline/bandwidth.cpp: see bandwidth.h.
#include "bench/measure/roofline/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/measure/device/device.h"
#include "variants/config/config.h"

namespace ladder {

namespace {

// The ladder of working sets. A CPU starts at 256 KiB (in L2; smaller, ATen's
// ~2 us per call outweighs the copy) and a GPU at 1 MiB, then x4. The largest
// is well past the last-level cache: 8x on a CPU, where a VM's share of a
// shared L3 is unknown (this repository's 2-vCPU VM reports the host's 260
// MiB L3 and falls to DRAM speed by 64 MiB), and 4x a GPU's L2. At most 1 GiB
// on a CPU: it runs before every `ladder run`.
constexpr int64_t kMiB = int64_t(1) << 20;
constexpr int64_t kCpuFirst = 256 << 10, kCpuLargestMin = 256 * kMiB, kCpuLargestMax = 1024 * kMiB;
constexpr int64_t kGpuFirst = kMiB, kGpuLargestMin = 1024 * kMiB, kGpuLargestMax = 4096 * kMiB;
constexpr int kCpuLlcMultiple = 8, kGpuL2Multiple = 4;
constexpr int64_t kStep = 4;
// Each kernel at each size: at least 3 timed calls and 20 ms, at most 100 calls.
constexpr int kMinReps = 3, kMaxReps = 100;
constexpr double kMinSeconds = 0.02;
constexpr float kTriadScalar = 3.0f;  // STREAM's

std::string method_text() {
  return fmt::format("STREAM's copy (dst.copy_(src), bytes = 2 x array) and triad (a = b + s*c by at::add_out, "
                     "bytes = 3 x array), and update (at::_fused_adamw_ in place on p, g, m, v, bytes = 7 x array), "
                     "on fp32 tensors, bytes counted as STREAM does (what the kernel reads and writes, no "
                     "write-allocate reads), 1 GB/s = 1e9 bytes/s; at each working set (every array of the kernel "
                     "together) the best of >= {} calls and >= {:.0f} ms, timed by the step timer; the arrays are "
                     "slices of one buffer written once first; the ceiling is the best kernel's",
                     kMinReps, kMinSeconds * 1e3);
}

// update's kernel: AdamW's step over four equal arrays, in place.
std::function<void()> update_kernel(const torch::Tensor& buf, int64_t quarter) {
  std::vector<torch::Tensor> p = {buf.narrow(0, 0, quarter)}, g = {buf.narrow(0, quarter, quarter)},
                             m = {buf.narrow(0, 2 * quarter, quarter)}, v = {buf.narrow(0, 3 * quarter, quarter)};
  std::vector<torch::Tensor> steps = {torch::ones({}, buf.options())};
  return [p, g, m, v, steps] {
    at::_fused_adamw_(p, g, m, v, {}, steps, /*lr=*/1e-6, /*beta1=*/0.9, /*beta2=*/0.95, /*weight_decay=*/0.0,
                      /*eps=*/1e-8, /*amsgrad=*/false, /*maximize=*/false);
  };
}

// Times copy, triad and update on arrays carved from `buf` (its first
// `working_set` bytes), as BandwidthAtSize.
BandwidthAtSize probe_size(const torch::Tensor& buf, int64_t working_set, StepTimer& timer) {
  const int64_t floats = working_set / int64_t(sizeof(float));
  const int64_t half = floats / 2, third = floats / 3, quarter = floats / 4;
  auto src = buf.narrow(0, 0, half), dst = buf.narrow(0, half, half);  // (half,) each
  auto a = buf.narrow(0, 0, third), b = buf.narrow(0, third, third), c = buf.narrow(0, 2 * third, third);
  const BestTime copy = best_time(timer, [&] { dst.copy_(src); }, kMinReps, kMinSeconds, kMaxReps);
  const BestTime triad = best_time(timer, [&] { at::add_out(a, b, c, kTriadScalar); }, kMinReps, kMinSeconds, kMaxReps);
  const BestTime update = best_time(timer, update_kernel(buf, quarter), kMinReps, kMinSeconds, kMaxReps);
  const auto gbps = [](double arrays, int64_t n, double ms) {
    return arrays * double(n * int64_t(sizeof(float))) / (ms * 1e-3) / 1e9;
  };
  BandwidthAtSize s;
  s.working_set_bytes = working_set;
  s.copy_gbps = gbps(2, half, copy.best_ms);
  s.triad_gbps = gbps(3, third, triad.best_ms);
  s.update_gbps = gbps(7, quarter, update.best_ms);
  s.reps = std::min({copy.reps, triad.reps, update.reps});
  return s;
}

}  // namespace

std::vector<int64_t> bandwidth_working_sets(const torch::Device& device, int64_t llc_bytes, int64_t memory_bytes) {
  const bool gpu = device.is_cuda();
  const int64_t multiple = gpu ? kGpuL2Multiple : kCpuLlcMultiple;
  int64_t largest = std::clamp(multiple * llc_bytes, gpu ? kGpuLargestMin : kCpuLargestMin,
                               gpu ? kGpuLargestMax : kCpuLargestMax);
  const int64_t first = gpu ? kGpuFirst : kCpuFirst;
  if (memory_bytes > 0) largest = std::max(first, std::min(largest, memory_bytes / 4));
  std::vector<int64_t> sizes;
  for (int64_t s = first; s < largest; s *= kStep) sizes.push_back(s);
  sizes.push_back(largest);
  return sizes;
}

MemoryBandwidth probe_memory_bandwidth(const torch::Device& device) {
  torch::NoGradGuard no_grad;
  const auto wall0 = std::chrono::steady_clock::now();
  MemoryBandwidth m;
  const int64_t llc_bytes = last_level_cache_bytes(device);
  if (llc_bytes > 0) m.llc_bytes = llc_bytes;
  m.threads = device.is_cuda() ? 0 : at::get_num_threads();
  m.method = method_text();
  if (device.is_cuda()) m.datasheet = datasheet_bandwidth(device_name(device));
  const std::vector<int64_t> sizes = bandwidth_working_sets(device, llc_bytes, device_memory_bytes(device));
  // One buffer of the largest working set, written once: its pages are
  // resident before any call is timed.
  const auto buf = torch::full({sizes.back() / int64_t(sizeof(float))}, 1.0f,
                               torch::TensorOptions().dtype(torch::kFloat).device(device));  // (floats,)
  auto timer = make_step_timer(device);
  synchronize(device);
  for (const int64_t s : sizes) m.sizes.push_back(probe_size(buf, s, *timer));
  m.dram_written = m.dram();
  m.probe_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall0).count();
  return m;
}

const BandwidthAtSize& bandwidth_for_working_set(const MemoryBandwidth& m, int64_t working_set_bytes) {
  if (m.sizes.empty()) throw std::invalid_argument("bandwidth_for_working_set: the bandwidth has no measured size");
  const BandwidthAtSize* pick = &m.sizes.front();
  for (const auto& s : m.sizes)
    if (s.working_set_bytes <= working_set_bytes) pick = &s;
  return *pick;
}

}  // namespace ladder
