// bench/measure/roofline/roofline.h: the device's two ceilings, measured: the
// dense-matmul TFLOP/s at each precision (a short probe of matmuls at a few
// sizes, layouts and inner lengths, the best call) and the memory bandwidth
// (bandwidth.h). MFU against the first is the figure that means something on
// CPUs, where no datasheet peak exists; the second is what a memory-bound
// part of the step is held against.
//
// `ladder run` measures both once per run, before the rungs, for fp32, tf32
// and bf16 (`ladder roofline`, a child process: <run_dir>/roofline.json), and
// every rung's 'p' MFU divides by that run's figure for its precision, so
// the 'p' columns of one run share their denominator. A lone `ladder
// measure` probes the matmuls in its own process after its steps.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/torch.h>

#include "bench/measure/roofline/bandwidth.h"
#include "bench/measure/roofline/mfu.h"
#include "reports/model/report/roofline_section.h"  // RooflineResult, RooflineFile
#include "variants/config/precision.h"

namespace ladder {

// The sizes n the probe tries, smallest first: 256, 512 and 1024 on a CPU,
// 4096 and 8192 on CUDA.
std::vector<int64_t> matmul_probe_sizes(const torch::Device& device);

// Times (n, k) @ (k, n) matmuls at each n of `sizes` (default
// matmul_probe_sizes), square (k = n) and, all but the largest, long (k =
// 4n), in the three layouts of a linear layer's GEMMs, each shape the best of
// >= 2 calls and its share of `seconds`, and keeps the best rate and the
// shape that gave it: no cold first call is ever the figure. A shape whose two calls alone would take
// longer than `seconds` or 0.5 s, at the rate its geometry reached at the
// size before (bf16 emulated on a CPU: 2 s per 1024 a@b), is passed over and
// recorded as skipped. tf32 uses float32 tensors under whatever matmul
// precision is currently set.
RooflineResult probe_matmul(const torch::Device& device, Precision precision, double seconds = 0.3,
                            std::vector<int64_t> sizes = {});

// Folds one more probe of the same precision into `best`: the better rate
// (with its shape), every shape's best, the reps and the wall time summed.
void keep_best(RooflineResult& best, const RooflineResult& round);

// Each probed precision's ceiling, under its name (fp32, tf32, bf16), as the
// run's roofline.json records it: the best call of every round, each round's
// best rate, and for tf32 whether the setting took effect.
struct MatmulCeilings {
  std::map<std::string, PrecisionRoofline> precisions;
  const PrecisionRoofline& of(Precision p) const;  // std::logic_error where p was not probed
  PrecisionRoofline& of(Precision p) { return const_cast<PrecisionRoofline&>(std::as_const(*this).of(p)); }
};

// The matmul ceilings of fp32, tf32 (under the tf32 rung's own setting) and
// bf16 on `device`, with the intra-op threads set now: probe_matmul in 3
// interleaved rounds (fp32, tf32, bf16, then again), each precision keeping
// its best (an emulated bf16 on a CPU too: its slow shapes are skipped, so a
// round costs it about 0.2 s). What the run's roofline and the
// micro-benchmarks' pct_of_peak divide by. Leaves tf32 off.
MatmulCeilings probe_matmul_ceilings(const torch::Device& device);

// Folds a later probe into `best`: each precision's keep_best, its rounds appended.
void keep_best(MatmulCeilings& best, const MatmulCeilings& again);

// The run's roofline: fp32, tf32 (under the tf32 rung's own setting) and
// bf16 matmuls, then the memory bandwidth (its "memory" object, bandwidth.h),
// on `device` with `threads` intra-op threads (0: all cores): what
// <run_dir>/roofline.json holds.
RooflineFile measure_run_roofline(const torch::Device& device, int threads);

// A roofline.json read strictly (roofline_file_from); a ConfigError names
// `path`, the field, its value and what was expected.
RooflineFile read_roofline_file(const std::string& path);

// A run's roofline.json as one process holds it, read once: the file, or
// why it could not be read. `missing`: it was named but is not there (the
// report then falls back to the datasheet and a probe); otherwise an error
// means the file is there and is not a roofline's JSON. No file named:
// nothing, and no error.
struct RooflineInUse {
  std::string file;
  std::optional<RooflineFile> roofline;
  std::string error;
  bool missing = false;
};
// Reads `file` leniently: a failure is kept in `error`, not thrown.
RooflineInUse read_roofline_in_use(const std::string& file);

// The entry of a run roofline for `precision`, checked against the device
// this process runs on; a ConfigError names `file` and what is wrong. The
// entry's shapes are left out (the report's MFU keeps the best shape).
RooflineResult run_roofline_entry(const RooflineFile& roofline, Precision precision,
                                  const std::string& device_name, const std::string& file);

// The memory bandwidth of a run roofline, checked as run_roofline_entry
// checks its header; a ConfigError names `file`, the field and its value
// (a roofline.json of a build before the bandwidth probe has none).
MemoryBandwidth run_roofline_memory(const RooflineFile& roofline, const std::string& device_name,
                                    const std::string& file);

// bf16 matmuls count as emulated on a CPU when, in the layout where
// emulation is slowest (a@b, both operands row-major: the input gradients'
// dy @ W), they reach less than this share of fp32's rate there. Without
// oneDNN's bf16 kernels ATen's fallback reached 0.9 GFLOP/s a thread in a@b
// against fp32's 30 or more, about 0.03x (AVX2 only; 0.011x on an AVX2-only
// EPYC, 2026-11-25), while a native bf16 runs at 0.52x fp32 (a 2-vCPU Xeon
// with avx512_bf16 and no AMX, 2026-11-29) to 2.2x (an EPYC with
// avx512_bf16) and more with AMX. The cut sits a factor 3.5 below the
// slowest native CPU and 5 above emulation, so a probe slowed 2x by a
// neighbour cannot flip the decision (at 0.5 the Xeon's 0.52x did, between
// the processes of one ddp job). Other layouts do not tell them apart: an
// emulated a@b^T reaches 12 GFLOP/s a thread.
inline constexpr double kEmulatedBf16Ratio = 0.15;
inline constexpr const char* kEmulationLayout = "a@b";

// --cpu-bf16 auto runs bf16 autocast on a CPU only where its bf16 matmuls
// are at least as fast as fp32's, in the same layout: emulated bf16 (0.03x)
// loses by far, and so does a native one slower than fp32 (this 2-vCPU Xeon's
// 0.52-0.55x: its fused-adamw rung ran at 0.73x fp32 under bf16 autocast,
// gpt2-124m B4 T64, 2026-11-29), while an EPYC's avx512_bf16 (2.2x) and AMX
// win. The cut sits a factor 1.8 above the Xeon and 2.2 below the EPYC; the
// probe's statistic is the best call of each shape, which a busy neighbour
// slows far less than 1.8x.
inline constexpr double kCpuBf16MinRatio = 1.0;

// Non-empty when a CPU's measured rates in the a@b layout say bf16 is
// emulated: the evidence, e.g. "a@b: bf16 0.001 vs fp32 0.033 TFLOP/s, 0.03x < 0.15x".
std::string bf16_emulated(double fp32_tflops, double bf16_tflops);

// A probe's best rate in one layout (0 when each such shape was passed over as
// too slow); its overall best where no shape names a layout.
double layout_tflops(const RooflineResult& r, const std::string& layout);

// Non-empty when a CPU's bf16 matmuls in the a@b layout reach less than
// kCpuBf16MinRatio of fp32's rate: the evidence, e.g. "a@b: bf16 0.182 vs
// fp32 0.333 TFLOP/s, 0.55x < 1x".
std::string bf16_slower(double fp32_tflops, double bf16_tflops);

// bf16_slower from a run roofline (its fp32 and bf16 entries), or from a
// short probe of both in this process when there is none.
std::string cpu_bf16_slower(const std::optional<RooflineFile>& roofline, const torch::Device& device);

// What --cpu-bf16 auto decides for `c` on `device`: sets c.cpu_bf16_slower
// (cpu_bf16_slower above) for a CPU rung with bf16 under "auto"; leaves
// every other config as it is. Then c.bf16_applied() is the decision.
void resolve_cpu_bf16(RunConfig& c, const std::optional<RooflineFile>& roofline, const torch::Device& device);

// `ladder roofline`: measure and print (or write with --out) the roofline.
int roofline_command(const std::vector<std::string>& args);

}  // namespace ladder
