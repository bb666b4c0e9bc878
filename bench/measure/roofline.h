// bench/measure/roofline.h: a short matmul probe that measures the device's real
// dense-matmul ceiling at the step's precision. MFU against it is the figure
// that means something on CPUs, where no datasheet peak exists.
//
// `ladder run` measures it once per run, before the rungs, for fp32, tf32
// and bf16 (`ladder roofline`, a child process: <run_dir>/roofline.json), and
// every rung's 'p' MFU divides by that run's figure for its precision, so
// the 'p' columns of one run share their denominator. A lone `ladder
// measure` probes in its own process after its steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/torch.h>

#include "bench/measure/mfu.h"

namespace ladder {

struct RooflineResult {
  double tflops = 0;  // best of the repetitions
  int64_t n = 0;      // square matmul size n x n x n
  int reps = 0;
  double probe_ms = 0;  // wall time the probe took
  std::string dtype;
};

// Times (n x n) @ (n x n) matmuls until ~min_seconds have passed. n defaults
// to 1024 on CPU and 8192 on CUDA. tf32 uses float32 tensors under whatever
// matmul precision is currently set.
RooflineResult probe_matmul(const torch::Device& device, Precision precision, int64_t n = 0,
                            double min_seconds = 0.3);

void to_json(nlohmann::json& j, const RooflineResult& r);

// The run's roofline: fp32, tf32 (under the tf32 rung's own setting) and
// bf16 on `device` with `threads` intra-op threads (0: all cores), as the
// JSON of <run_dir>/roofline.json (kind "ladder.roofline").
nlohmann::json measure_run_roofline(const torch::Device& device, int threads);

// The entry of a run roofline for `precision`, checked against the device
// this process runs on; a ConfigError names `file` and what is wrong.
RooflineResult run_roofline_entry(const nlohmann::json& roofline, Precision precision,
                                  const std::string& device_name, const std::string& file);

// bf16 matmuls count as emulated on a CPU when they reach less than this
// share of fp32's rate. Native bf16 runs at 1.5x to 16x fp32 (2.2x measured
// on an EPYC with avx512_bf16, no AMX); without AVX-512, oneDNN has no bf16
// matmul and ATen's fallback reached 0.011x fp32 (94x slower, an AVX2-only
// EPYC, 2026-11-25). Below 0.5x a bf16 matmul costs more than the fp32 one
// it replaces, so bf16 autocast could only slow a rung down; the gap between
// the two kinds of CPU is wide enough that the exact cut does not matter.
inline constexpr double kEmulatedBf16Ratio = 0.5;

// Non-empty when a CPU's measured rates say bf16 is emulated: the evidence,
// e.g. "bf16 0.00073 vs fp32 0.069 TFLOP/s, 0.011x < 0.5x".
std::string bf16_emulated(double fp32_tflops, double bf16_tflops);

// The same from a run roofline's JSON (fp32 and bf16 entries), or from a
// short probe of both in this process when `roofline` is null.
std::string cpu_bf16_emulated(const nlohmann::json& roofline, const torch::Device& device);

// What --cpu-bf16 auto decides for `c` on `device`: sets c.cpu_bf16_emulated
// (cpu_bf16_emulated above) for a CPU rung with bf16 under "auto"; leaves
// every other config as it is. Then c.bf16_applied() is the decision.
void resolve_cpu_bf16(RunConfig& c, const nlohmann::json& roofline, const torch::Device& device);

// `ladder roofline`: measure and print (or write with --out) the roofline.
int roofline_command(const std::vector<std::string>& args);

}  // namespace ladder
