// bench/micro/harness.h: the shared harness of the micro-benchmarks (the
// nccl-tests "common" part). Each mechanism of the ladder is one family in its
// own file (matmul.cpp, attention.cpp, ...) that registers google/benchmark
// benchmarks through this interface:
//
//  - MicroConfig: the shapes of a preset, the devices, the AdamW settings.
//  - check_once / passed_check: every benchmark compares its variants (or a
//    float64 reference) within the precision's tolerance before it is timed,
//    once per benchmark, as llm.c does; a failed check skips the benchmark
//    with an error and makes the run exit 1. The result is in the JSON as the
//    counters `check_passed` and `check_rel_err` and in the label.
//  - time_iterations: the timed loop. Each iteration is bracketed by the
//    harness's StepTimer (bench/measure/device/device.h: CUDA events on GPU, a steady clock
//    on CPU) and reported with SetIterationTime, so every benchmark uses
//    UseManualTime. One untimed call warms up first.
//  - set_flop_counters / set_byte_counters: FLOP/s or bytes/s, and % of the
//    matmul peak from bench/measure/roofline/mfu.h (datasheet on CUDA) or bench/measure/roofline/roofline.h (the
//    measured roofline, on CPU and on GPUs the table does not know).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "bench/measure/device/device.h"
#include "bench/measure/roofline/mfu.h"
#include "variants/config/config.h"
#include "variants/config/switch_decl.h"

namespace ladder::micro {

struct MicroConfig {
  std::string preset;  // the preset the shapes come from
  ModelConfig model;
  TrainConfig train;               // AdamW hyper-parameters
  int64_t seq = 0;                 // T of the token-wise families (the preset's)
  int64_t preset_batch = 1;        // the preset's micro-batch
  std::optional<int64_t> batch;    // --batch
  std::vector<torch::Device> devices;
  uint64_t seed = 1337;

  // Sequences per benchmark: --batch, else the preset's batch on CUDA and 1 on
  // CPU (one gpt2-124m lm_head forward+backward at B=1 already takes seconds
  // on a 2-core CPU).
  int64_t batch_for(const torch::Device& device) const {
    return batch ? *batch : device.is_cuda() ? preset_batch : 1;
  }
};

// The short name used in benchmark names: "cpu", "cuda:0".
std::string device_tag(const torch::Device& device);

// The real GPT-2 parameter list of a model shape, in model->parameters() order
// (wte once: lm_head is tied to it), as meta tensors: shapes and dtypes only.
// Built once per shape.
const std::vector<torch::Tensor>& gpt_parameter_shapes(const ModelConfig& model);

// ---- correctness gate -------------------------------------------------------

struct CheckResult {
  bool passed = false;
  double rel_err = 0;    // the worst relative error found
  double tolerance = 0;  // what it had to stay within
  std::string what;      // what was compared, e.g. "sdpa vs explicit: y, dq, dk, dv"
  // The way has no kernel on this device (`what` says why, e.g. cuBLASLt's
  // heuristic offers no algorithm for that epilogue): the benchmark is not
  // timed and says so, and it is not a failed check.
  bool unavailable = false;
};
// A benchmark skipped because its way is not available on the device starts
// its message with this; the reporter and the exit code tell it from errors.
inline constexpr const char* kNotAvailable = "not available here: ";
// The CheckResult of a way that is not available (`why`).
CheckResult unavailable_check(std::string why);

// ||got - want||_2 / ||want||_2, in float64, of tensors of any dtype/device.
double rel_err(const torch::Tensor& got, const torch::Tensor& want);
// The worst rel_err over pairs, and a CheckResult for it.
CheckResult compare_all(const std::vector<std::pair<torch::Tensor, torch::Tensor>>& got_want,
                        double tolerance, std::string what);

// Tolerance for one kernel's output against its reference, by precision:
// 1e-5 for fp32, 5e-3 for tf32, 2e-2 for bf16. An output's relative L2
// error after one op, not the ladder's parity gate on a whole step's loss
// and gradient norm (variants/config/rungs.h), which averages errors over millions
// of components: bf16 kernels were measured up to 5.3e-3 on an H100.
double tolerance_for(Precision p);

// Runs `check` the first time `key` (the benchmark's name, family first) is
// seen and caches the result, so a benchmark that google/benchmark invokes
// several times checks once. An exception from `check` is a failed check
// with its message.
const CheckResult& check_once(const std::string& key, const std::function<CheckResult()>& check);

// Records the check in `state` (counters check_passed, check_rel_err,
// check_tolerance; the label) and returns true if it passed; otherwise skips
// the benchmark with an error naming the check.
bool passed_check(benchmark::State& state, const CheckResult& check, const std::string& label_extra = "");

// Number of failed checks so far (the command's exit code is 1 if any).
int failed_checks();

// ---- timing and counters ----------------------------------------------------

// Warms up once (untimed), then times each iteration of `fn` with the
// device's StepTimer. Returns the total timed seconds.
double time_iterations(benchmark::State& state, const torch::Device& device, const std::function<void()>& fn);

// The peak TFLOPS a matmul-bound benchmark is compared against, and where it
// comes from: the datasheet (bench/measure/roofline/mfu.cpp) for known GPUs, otherwise the
// measured roofline (bench/measure/roofline/roofline.h: every precision in interleaved
// rounds, as `ladder run` probes it), probed once per device.
struct Peak {
  double tflops = 0;
  std::string basis;  // "datasheet H100 SXM ..." or "measured roofline: 512x512x2048 a@b fp32 matmul, ..."
  bool measured = false;
};
const Peak& matmul_peak(const torch::Device& device, Precision precision);

// flop_per_s (a rate) and pct_of_peak / peak_tflops against matmul_peak. A
// measured peak below what the benchmark reached was probed while the machine
// was busy (on a shared 2-vCPU VM a neighbour's compile once held every round
// of it to 0.038 of fp32's 0.33 TFLOP/s): the ceilings are probed again and
// each keeps its best, up to kMaxReprobes times a device, before the share is
// set. One still passed after that is reported as it is, above 100 %.
void set_flop_counters(benchmark::State& state, double flops_per_iter, double timed_s, const torch::Device& device,
                       Precision precision);
inline constexpr int kMaxReprobes = 3;
// bytes_per_s (a rate): the minimum bytes each iteration must move.
void set_byte_counters(benchmark::State& state, double bytes_per_iter);

// ---- precision ----------------------------------------------------------------

torch::ScalarType dtype_for(Precision p);  // bf16 -> kBFloat16, else kFloat32

// For its lifetime, fp32 matmuls run as `p` says: TF32 (or oneDNN's reduced
// fp32 mode on CPU) for kTF32, full precision otherwise (variants/config/precision.h).
class MatmulPrecisionScope {
 public:
  MatmulPrecisionScope(const torch::Device& device, Precision p);
  ~MatmulPrecisionScope();
  MatmulPrecisionScope(const MatmulPrecisionScope&) = delete;
  MatmulPrecisionScope& operator=(const MatmulPrecisionScope&) = delete;
  bool effective() const { return effective_; }
  const std::string& reason() const { return reason_; }

 private:
  torch::Device device_;
  bool effective_ = true;
  std::string reason_;
};

// ---- families -----------------------------------------------------------------

// One family per mechanism; each file fills one of these (nccl-tests style).
struct Family {
  const char* name;         // the first component of its benchmark names
  const char* mechanism;    // the rung mechanism it isolates
  void (*register_benchmarks)(const MicroConfig& cfg);
  void (*teardown)();       // releases what the family keeps between benchmarks (may be null)
  const SwitchDecl* rung;   // the switch of that mechanism: families run in its ladder order
};

// Registers a benchmark timed with UseManualTime (the only way families add one).
benchmark::internal::Benchmark* add_benchmark(const std::string& name,
                                              std::function<void(benchmark::State&)> fn);

// A test hook: with LADDER_MICRO_PERTURB=<family>, check_once fails that
// family's checks (as if a variant disagreed), so the tests can show that a
// failed check skips its benchmark and fails the run.
inline constexpr const char* kPerturbEnv = "LADDER_MICRO_PERTURB";

}  // namespace ladder::micro
