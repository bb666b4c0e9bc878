// bench/measure/observers/speed_probe.cpp: see speed_probe.h.
#include "bench/measure/observers/speed_probe.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/measure/device/device.h"
#include "reports/stats/stats.h"
#include "variants/config/precision_name.h"

namespace ladder {


namespace {

// The sizes, from measurements on a 2-core AVX2 EPYC VM
// (reports/results/2026-11-27-speed-probe/probe-sizes.txt): a 512 fp32 GEMM
// takes 2.2 ms, and the median of its repetitions varies 1.3-1.7 % between
// probes (256: 0.3 ms, mostly thread wake-up, 41-216 %; 1024: 19-21 ms,
// 4-7 %); a 64 MiB sweep, twice the 32 MiB last-level cache, takes 4.5-5.3
// ms (25-30 GB/s) and varies 8-10 %, as much as any size tried: the VM's
// memory bandwidth itself moves. Nine repetitions of each
// and one untimed: about 70 ms a probe, 0.14 s a process, about 1 % of a
// default process. On a GPU the same share of a step buys far larger work: a
// 4096 GEMM and a 1 GiB sweep (larger than any GPU's L2), a few ms each.
constexpr int64_t kCpuGemmN = 512, kCudaGemmN = 4096;
constexpr int64_t kCpuSweepBytes = int64_t(64) << 20, kCudaSweepBytes = int64_t(1) << 30;
constexpr int kReps = 9;

double median_ms(std::vector<double> v) { return summarize(std::move(v)).median; }

// The swept buffer, (bytes / 4,) floats of 1. On a CPU it is mapped outside
// the heap and unmapped when freed: the heap keeps what it frees
// (bench/measure/device/cpu_allocator.h), and a probe just before the measured steps must
// not leave 64 MiB in the resident set they are measured by.
torch::Tensor sweep_buffer(int64_t bytes, const torch::Device& device) {
  const int64_t n = bytes / int64_t(sizeof(float));
  const auto floats = torch::TensorOptions().device(device).dtype(torch::kFloat);
  if (device.is_cuda()) return torch::ones({n}, floats);
  void* p = mmap(nullptr, size_t(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error(fmt::format("speed probe: cannot map {} bytes", bytes));
  torch::Tensor t = torch::from_blob(p, {n}, [bytes](void* q) { munmap(q, size_t(bytes)); }, floats);
  return t.fill_(1);
}

// Times `op` once per repetition after one untimed call.
template <class Op>
std::vector<double> time_reps(const ProbeWorkload& w, const torch::Device& device, StepTimer& timer, Op op) {
  op();
  synchronize(device);
  std::vector<double> ms;
  for (int k = 0; k < w.reps; ++k) {
    timer.start();
    op();
    timer.stop();
    ms.push_back(timer.elapsed_ms());
  }
  return ms;
}

}  // namespace

std::string ProbeWorkload::key() const {
  const Precision gemm_precision = gemm_dtype == torch::kBFloat16 ? Precision::kBF16 : Precision::kFP32;
  return fmt::format("{} {} gemm {} + sweep {} MiB, {} reps{}", device, precision_name(gemm_precision), gemm_n,
                     sweep_bytes >> 20, reps,
                     threads > 0 ? fmt::format(", {} thread{}", threads, threads == 1 ? "" : "s") : "");
}

ProbeWorkload probe_workload(const torch::Device& device, bool bf16) {
  ProbeWorkload w;
  w.device = device.is_cuda() ? "cuda" : "cpu";
  w.gemm_dtype = bf16 ? torch::kBFloat16 : torch::kFloat;
  w.gemm_n = device.is_cuda() ? kCudaGemmN : kCpuGemmN;
  w.sweep_bytes = device.is_cuda() ? kCudaSweepBytes : kCpuSweepBytes;
  w.reps = kReps;
  w.threads = device.is_cuda() ? 0 : at::get_num_threads();
  return w;
}

ProbeReading run_speed_probe(const ProbeWorkload& w, const torch::Device& device, StepTimer& timer) {
  const auto t0 = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  // Deterministic inputs: the probe draws nothing from the step's generators.
  const auto opts = torch::TensorOptions().device(device).dtype(w.gemm_dtype);
  const torch::Tensor a = torch::linspace(-1, 1, w.gemm_n * w.gemm_n, opts).reshape({w.gemm_n, w.gemm_n});  // (N, N)
  const torch::Tensor b = a.t().contiguous();                                                             // (N, N)
  torch::Tensor c = torch::empty_like(a);                                                                 // (N, N)
  torch::Tensor buf = sweep_buffer(w.sweep_bytes, device);  // (sweep_bytes / 4,)
  ProbeReading r;
  r.gemm_reps_ms = time_reps(w, device, timer, [&] { torch::mm_out(c, a, b); });
  r.sweep_reps_ms = time_reps(w, device, timer, [&] { buf.neg_(); });  // reads and writes every byte
  r.gemm_ms = median_ms(r.gemm_reps_ms);
  r.sweep_ms = median_ms(r.sweep_reps_ms);
  synchronize(device);
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

double probe_speed_index(const ProbeReading& before, const ProbeReading& after) {
  const double gemm = (before.gemm_ms + after.gemm_ms) / 2, sweep = (before.sweep_ms + after.sweep_ms) / 2;
  return gemm + sweep > 0 ? 1000.0 / (gemm + sweep) : 0;
}

ProbeSection probe_section(const ProbeWorkload& w, const ProbeReading& before, const ProbeReading& after) {
  auto reading = [&](const ProbeReading& r) {
    ProbeRun run;
    run.gemm_ms = r.gemm_ms;
    run.sweep_ms = r.sweep_ms;
    if (r.gemm_ms > 0) run.gemm_tflops = w.gemm_flop() / (r.gemm_ms * 1e9);
    if (r.sweep_ms > 0) run.sweep_gb_per_s = 2.0 * double(w.sweep_bytes) / (r.sweep_ms * 1e6);
    run.wall_ms = r.wall_ms;
    run.gemm_reps_ms = r.gemm_reps_ms;
    run.sweep_reps_ms = r.sweep_reps_ms;
    return run;
  };
  const double total_before = before.gemm_ms + before.sweep_ms, total_after = after.gemm_ms + after.sweep_ms;
  ProbeSection p;
  p.workload = w.key();
  p.sweep_bytes = int64_t(w.sweep_bytes);
  p.before = reading(before);
  p.after = reading(after);
  p.speed_index_per_s = probe_speed_index(before, after);
  p.drift_pct = total_before > 0 ? std::optional<double>(100.0 * (total_after / total_before - 1)) : std::nullopt;
  p.basis =
      "a fixed workload (gemm: an N x N matmul in the rung's matmul precision; sweep: one in-place pass over a buffer "
      "larger than the last-level cache), the median of its repetitions, timed just before the measured steps (on "
      "CUDA before the warm-up) and after them; speed_index_per_s = 1000 / (gemm_ms + sweep_ms), each the mean of "
      "the two readings; drift_pct: the probe's time after against before";
  return p;
}

bool SpeedProbeRun::run(ProbeReading& into) {
  try {
    into = run_speed_probe(workload_, device_, timer_);
    return true;
  } catch (const c10::Error& e) {  // c10::OutOfMemoryError among them
    error_ = e.what_without_backtrace();
    return false;
  } catch (const std::runtime_error& e) {  // the CPU buffer could not be mapped
    error_ = e.what();
    return false;
  }
}

ProbeSection SpeedProbeRun::section() const {
  if (ok_before_ && ok_after_) return probe_section(workload_, before_, after_);
  ProbeSection failed;
  failed.workload = workload_.key();
  failed.error = error_.substr(0, 300);
  return failed;
}

}  // namespace ladder
