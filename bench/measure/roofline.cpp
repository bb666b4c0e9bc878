// bench/measure/roofline.cpp: see roofline.h.
#include "bench/measure/roofline.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/measure/device.h"
#include "profiler/common/atomic_file.h"
#include "profiler/common/cli.h"
#include "reports/report.h"
#include "variants/precision.h"

namespace ladder {

RooflineResult probe_matmul(const torch::Device& device, Precision precision, int64_t n,
                            double min_seconds) {
  torch::NoGradGuard no_grad;
  RooflineResult r;
  r.n = n > 0 ? n : (device.is_cuda() ? 8192 : 1024);
  const auto dtype = precision == Precision::kBF16 ? torch::kBFloat16 : torch::kFloat32;
  r.dtype = precision == Precision::kBF16 ? "bfloat16" : "float32";
  auto opts = torch::TensorOptions().dtype(dtype).device(device);
  auto a = torch::randn({r.n, r.n}, opts);  // (n, n)
  auto b = torch::randn({r.n, r.n}, opts);  // (n, n)
  auto c = torch::empty({r.n, r.n}, opts);  // (n, n)
  const double flops = 2.0 * double(r.n) * double(r.n) * double(r.n);
  const auto warm0 = std::chrono::steady_clock::now();
  torch::mm_out(c, a, b);  // warm up kernels and caches
  synchronize(device);
  const double warm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - warm0).count();
  if (warm_s > 4 * min_seconds && device.is_cpu()) {
    // Seconds for one matmul (bf16 emulated on a CPU): nothing was left to
    // warm up, and a second one would only make the run wait.
    r.reps = 1;
    r.probe_ms = warm_s * 1e3;
    r.tflops = flops / warm_s / 1e12;
    return r;
  }
  auto timer = make_step_timer(device);
  const auto wall0 = std::chrono::steady_clock::now();
  double best_ms = 1e300;
  while (true) {
    timer->start();
    torch::mm_out(c, a, b);
    timer->stop();
    best_ms = std::min(best_ms, timer->elapsed_ms());
    ++r.reps;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    // A matmul slower than 4x the budget (bf16 emulated on a CPU: ~3 s at
    // n 1024) is measured once: its rate is far from any ceiling anyway.
    const bool slow = best_ms * 1e-3 > 4 * min_seconds;
    if ((wall >= min_seconds && (r.reps >= 3 || slow)) || r.reps >= 200) {
      r.probe_ms = wall * 1e3;
      break;
    }
  }
  r.tflops = flops / (best_ms * 1e-3) / 1e12;
  return r;
}

void to_json(nlohmann::json& j, const RooflineResult& r) {
  j = {{"matmul_tflops", r.tflops}, {"n", r.n}, {"reps", r.reps}, {"dtype", r.dtype},
       {"probe_ms", r.probe_ms}, {"statistic", "best of reps"}};
}

nlohmann::json measure_run_roofline(const torch::Device& device, int threads) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  // Every rung's 'p' MFU divides by these figures, so one disturbed moment
  // must not lower them: the precisions are probed in interleaved rounds
  // (fp32, tf32, bf16, fp32, ...) and each keeps its best round. On this
  // repository's 2-core VM a single 0.3 s probe once measured fp32 at half
  // its ceiling, which put the fp32 rung at 118 % 'p' MFU.
  constexpr int kRounds = 3;
  constexpr double kSecondsPerProbe = 0.15;
  const Precision order[] = {Precision::kFP32, Precision::kTF32, Precision::kBF16};
  RooflineResult best[3];
  nlohmann::json rounds[3] = {nlohmann::json::array(), nlohmann::json::array(), nlohmann::json::array()};
  SwitchEffect tf32;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < 3; ++i) {
      // Emulated bf16 (seconds per matmul) is not probed again: more rounds
      // could not make it a ceiling, only make the run wait.
      if (round > 0 && order[i] == Precision::kBF16 && device.is_cpu() &&
          !bf16_emulated(best[0].tflops, best[i].tflops).empty())
        continue;
      if (order[i] == Precision::kTF32)
        tf32 = enable_tf32(device);
      else
        disable_tf32(device);
      const RooflineResult r = probe_matmul(device, order[i], 0, kSecondsPerProbe);
      rounds[i].push_back(r.tflops);
      const int reps = best[i].reps + r.reps;
      const double probe_ms = best[i].probe_ms + r.probe_ms;
      if (r.tflops > best[i].tflops) best[i] = r;
      best[i].reps = reps;
      best[i].probe_ms = probe_ms;
    }
  }
  disable_tf32(device);
  nlohmann::json precisions = nlohmann::json::object();
  for (int i = 0; i < 3; ++i) {
    nlohmann::json e = best[i];
    e["tflops_per_round"] = rounds[i];
    precisions[precision_name(order[i])] = e;
  }
  precisions["tf32"]["tf32_effective"] = tf32.effective;
  precisions["tf32"]["tf32_mechanism"] = tf32.mechanism;
  if (device.is_cpu()) {
    const std::string emulated = bf16_emulated(best[0].tflops, best[2].tflops);
    precisions["bf16"]["emulated"] = !emulated.empty();
    if (!emulated.empty()) precisions["bf16"]["emulated_evidence"] = emulated;
  }
  return {{"schema_version", kSchemaVersion},
          {"kind", "ladder.roofline"},
          {"device", device_name(device)},
          {"device_spec", device.str()},
          {"threads", threads},
          {"measured_at", utc_now_iso8601()},
          {"method", fmt::format("square matmuls (n x n) @ (n x n), {} interleaved rounds of >= {} s per precision "
                                 "(fp32, tf32, bf16, then again), the best repetition of all; measured once per "
                                 "run before the rungs",
                                 kRounds, kSecondsPerProbe)},
          {"precisions", precisions}};
}

RooflineResult run_roofline_entry(const nlohmann::json& roofline, Precision precision,
                                  const std::string& device_name, const std::string& file) {
  const char* name = precision_name(precision);
  if (roofline.value("kind", "") != "ladder.roofline")
    throw ConfigError(fmt::format("{}: field 'kind' is {}, expected \"ladder.roofline\"", file,
                                  roofline.contains("kind") ? roofline["kind"].dump() : "missing"));
  const std::string measured_on = roofline.value("device", "");
  if (measured_on != device_name)
    throw ConfigError(fmt::format("{}: field 'device' is '{}', but this process runs on '{}'; expected a "
                                  "roofline measured on this device",
                                  file, measured_on, device_name));
  const auto& entry = roofline.contains("precisions") ? roofline["precisions"] : nlohmann::json();
  if (!entry.contains(name) || !entry[name].contains("matmul_tflops") || !entry[name]["matmul_tflops"].is_number() ||
      !(entry[name]["matmul_tflops"].get<double>() > 0))
    throw ConfigError(fmt::format("{}: field 'precisions.{}.matmul_tflops' is missing or not > 0; expected the "
                                  "measured TFLOP/s",
                                  file, name));
  const auto& e = entry[name];
  RooflineResult r;
  r.tflops = e["matmul_tflops"].get<double>();
  r.n = e.value("n", int64_t(0));
  r.reps = e.value("reps", 0);
  r.probe_ms = e.value("probe_ms", 0.0);
  r.dtype = e.value("dtype", "");
  return r;
}

std::string bf16_emulated(double fp32_tflops, double bf16_tflops) {
  if (!(fp32_tflops > 0) || !(bf16_tflops >= 0) || bf16_tflops >= kEmulatedBf16Ratio * fp32_tflops) return "";
  return fmt::format("bf16 {:.3g} vs fp32 {:.3g} TFLOP/s, {:.2g}x < {}x", bf16_tflops, fp32_tflops,
                     bf16_tflops / fp32_tflops, kEmulatedBf16Ratio);
}

std::string cpu_bf16_emulated(const nlohmann::json& roofline, const torch::Device& device) {
  if (!device.is_cpu()) return "";
  if (!roofline.is_null()) {
    const auto rate = [&](const char* p) {
      const auto& e = roofline["precisions"][p];
      return e.contains("matmul_tflops") ? e["matmul_tflops"].get<double>() : 0.0;
    };
    const std::string why = bf16_emulated(rate("fp32"), rate("bf16"));
    return why.empty() ? why : why + ", the run's roofline";
  }
  // n 512: an emulated bf16 matmul takes ~0.4 s there, a native one ~1 ms.
  disable_tf32(device);
  const RooflineResult fp32 = probe_matmul(device, Precision::kFP32, 512, 0.05);
  const RooflineResult bf16 = probe_matmul(device, Precision::kBF16, 512, 0.05);
  const std::string why = bf16_emulated(fp32.tflops, bf16.tflops);
  return why.empty() ? why : why + ", probed at n 512";
}

void resolve_cpu_bf16(RunConfig& c, const nlohmann::json& roofline, const torch::Device& device) {
  if (device.is_cpu() && c.sw.on("bf16") && c.cpu_bf16 == "auto") c.cpu_bf16_emulated = cpu_bf16_emulated(roofline, device);
}

int roofline_command(const std::vector<std::string>& args) {
  std::string device_spec = default_device_spec(), out;
  int64_t threads = 0;
  bool quiet = false;
  ArgParser ap("roofline",
               "Measure the device's dense-matmul ceiling at fp32, tf32 and bf16 (square matmuls,\n"
               "best of >= 0.3 s each): the denominator of MFU 'p'. 'ladder run' measures it once per\n"
               "run, before the rungs, into <run_dir>/roofline.json.");
  ap.add_value("--device", "cpu|cuda|cuda:N", "device (default: cuda when available, else cpu)",
               [&](const std::string& v) { device_spec = v; });
  ap.add_value("--threads", "N", "intra-op CPU threads (default: all cores)",
               [&](const std::string& v) { threads = parse_int("--threads", v); });
  ap.add_value("--out", "FILE", "write the JSON here (atomically)", [&](const std::string& v) { out = v; });
  ap.add_flag("--quiet", "print nothing", [&] { quiet = true; });
  if (!ap.parse(args)) return 0;
  if (threads < 0 || threads > 4096)
    throw ConfigError(fmt::format("--threads: got {}, expected 0 (all cores) .. 4096", threads));
  const torch::Device device = parse_device(device_spec);
  if (!out.empty() && std::filesystem::path(out).has_parent_path())
    ensure_writable_dir(std::filesystem::path(out).parent_path().string(), "--out");
  const nlohmann::json roof = measure_run_roofline(device, int(threads));
  if (!out.empty()) write_file_atomically(out, roof.dump(2) + "\n");
  if (!quiet) {
    fmt::print("roofline of {} ({} threads):\n", roof["device"].get<std::string>(), roof["threads"].get<int>());
    for (const auto& [name, e] : roof["precisions"].items())
      fmt::print("  {:<5} {:>9.3f} TFLOP/s  (n {}, {} reps, {}){}\n", name, e["matmul_tflops"].get<double>(),
                 e["n"].get<int64_t>(), e["reps"].get<int>(), e["dtype"].get<std::string>(),
                 e.contains("tf32_effective") && !e["tf32_effective"].get<bool>() ? ", tf32 not effective here" : "");
  }
  return 0;
}

}  // namespace ladder
