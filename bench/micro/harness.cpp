// bench/micro/harness.cpp: see harness.h.
#include "bench/micro/harness.h"

#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/measure/roofline/roofline.h"
#include "variants/model/model.h"
#include "variants/config/precision.h"
#include "variants/config/rungs.h"

namespace ladder::micro {

std::string device_tag(const torch::Device& device) {
  return device.is_cuda() ? fmt::format("cuda:{}", device.has_index() ? device.index() : 0) : "cpu";
}

const std::vector<torch::Tensor>& gpt_parameter_shapes(const ModelConfig& m) {
  static std::map<std::string, std::vector<torch::Tensor>> cache;
  const std::string key = fmt::format("{}/{}/{}/{}/{}", m.n_layer, m.n_head, m.n_embd, m.block_size, m.vocab_size);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  std::vector<torch::Tensor> shapes;
  for (const auto& p : GPT(m)->parameters())
    shapes.push_back(torch::empty(p.sizes(), p.options().device(torch::kMeta)));
  return cache.emplace(key, std::move(shapes)).first->second;
}

// ---- correctness gate -------------------------------------------------------

double rel_err(const torch::Tensor& got, const torch::Tensor& want) {
  TORCH_CHECK(got.sizes() == want.sizes(), "rel_err: shapes differ: ", got.sizes(), " vs ", want.sizes());
  auto g = got.detach().to(torch::kCPU, torch::kFloat64);
  auto w = want.detach().to(torch::kCPU, torch::kFloat64);
  const double diff = (g - w).norm().item<double>();
  const double norm = w.norm().item<double>();
  if (norm == 0) return diff == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return diff / norm;
}

CheckResult compare_all(const std::vector<std::pair<torch::Tensor, torch::Tensor>>& got_want, double tolerance,
                        std::string what) {
  CheckResult r;
  r.tolerance = tolerance;
  r.what = std::move(what);
  for (const auto& [got, want] : got_want) {
    const double e = rel_err(got, want);
    if (std::isnan(e) || e > r.rel_err) r.rel_err = e;  // a NaN, once seen, stays (and never passes)
  }
  r.passed = r.rel_err <= tolerance;  // false for NaN
  return r;
}

double tolerance_for(Precision p) {
  switch (p) {
    case Precision::kBF16: return 2e-2;
    case Precision::kTF32: return 5e-3;
    case Precision::kFP32: return 1e-5;
  }
  return 1e-5;
}

namespace {
std::mutex g_checks_mutex;
std::map<std::string, CheckResult>& checks() {
  static std::map<std::string, CheckResult> m;
  return m;
}
int g_failed_checks = 0;
thread_local std::string g_label;  // the check's label, extended by set_flop_counters
}  // namespace

const CheckResult& check_once(const std::string& key, const std::function<CheckResult()>& check) {
  {
    std::lock_guard<std::mutex> lock(g_checks_mutex);
    auto it = checks().find(key);
    if (it != checks().end()) return it->second;
  }
  CheckResult r;
  try {
    r = check();
  } catch (const std::exception& e) {
    r.passed = false;
    r.rel_err = std::numeric_limits<double>::quiet_NaN();
    r.what = fmt::format("the check threw: {}", e.what());
  }
  const char* perturb = std::getenv(kPerturbEnv);
  const std::string family = key.substr(0, key.find('/'));
  if (perturb && family == perturb) {
    r.passed = false;
    r.rel_err = std::max(r.rel_err, 1.0);
    r.what += fmt::format(" (perturbed by {}={})", kPerturbEnv, perturb);
  }
  std::lock_guard<std::mutex> lock(g_checks_mutex);
  if (!r.passed && !r.unavailable) ++g_failed_checks;
  return checks().emplace(key, std::move(r)).first->second;
}

CheckResult unavailable_check(std::string why) {
  CheckResult r;
  r.unavailable = true;
  r.rel_err = std::numeric_limits<double>::quiet_NaN();
  r.what = std::move(why);
  return r;
}

bool passed_check(benchmark::State& state, const CheckResult& check, const std::string& label_extra) {
  state.counters["check_passed"] = check.passed ? 1.0 : 0.0;
  state.counters["check_rel_err"] = check.rel_err;
  state.counters["check_tolerance"] = check.tolerance;
  if (check.unavailable) {
    state.SkipWithError((std::string(kNotAvailable) + check.what).c_str());
    return false;
  }
  if (!check.passed) {
    const std::string msg = fmt::format("correctness check failed: {}: relative error {:.3e} > tolerance {:.0e}",
                                        check.what, check.rel_err, check.tolerance);
    state.SkipWithError(msg.c_str());
    return false;
  }
  g_label = fmt::format("checked {} (rel err {:.1e} <= {:.0e}){}", check.what, check.rel_err, check.tolerance,
                        label_extra.empty() ? "" : "; " + label_extra);
  state.SetLabel(g_label);
  return true;
}

int failed_checks() {
  std::lock_guard<std::mutex> lock(g_checks_mutex);
  return g_failed_checks;
}

// ---- timing and counters ----------------------------------------------------

double time_iterations(benchmark::State& state, const torch::Device& device, const std::function<void()>& fn) {
  fn();  // warm-up: allocator, oneDNN primitive cache, cuBLAS handles
  synchronize(device);
  auto timer = make_step_timer(device);
  double total_s = 0;
  for (auto _ : state) {
    timer->start();
    fn();
    timer->stop();
    const double s = timer->elapsed_ms() * 1e-3;
    state.SetIterationTime(s);
    total_s += s;
  }
  return total_s;
}

namespace {
struct MeasuredCeilings {
  MatmulCeilings ceilings;
  int reprobes = 0;
};
std::map<std::string, MeasuredCeilings>& measured_ceilings() {
  static std::map<std::string, MeasuredCeilings> m;
  return m;
}
std::map<std::string, Peak>& peaks() {  // by "device/precision"
  static std::map<std::string, Peak> m;
  return m;
}

// The device's ceilings probed once more, each keeping its best; false when
// it has been probed again kMaxReprobes times already.
bool reprobe(const torch::Device& device) {
  MeasuredCeilings& m = measured_ceilings().at(device_tag(device));
  if (m.reprobes >= kMaxReprobes) return false;
  keep_best(m.ceilings, probe_matmul_ceilings(device));
  ++m.reprobes;
  for (auto it = peaks().begin(); it != peaks().end();)
    it = it->first.rfind(device_tag(device) + "/", 0) == 0 ? peaks().erase(it) : std::next(it);
  return true;
}
}  // namespace

const Peak& matmul_peak(const torch::Device& device, Precision precision) {
  const std::string key = device_tag(device) + "/" + precision_name(precision);
  if (auto it = peaks().find(key); it != peaks().end()) return it->second;
  Peak peak;
  if (auto sheet = device.is_cuda() ? datasheet_peak(device_name(device), precision) : std::nullopt) {
    peak.tflops = sheet->tflops;
    peak.basis = fmt::format("datasheet {} ({})", sheet->device, sheet->source);
  } else {
    // A ceiling no benchmark may pass: the roofline's probe of every
    // precision in interleaved rounds, as `ladder run` measures it, so one
    // disturbed moment cannot lower it.
    auto it = measured_ceilings().find(device_tag(device));
    if (it == measured_ceilings().end())
      it = measured_ceilings().emplace(device_tag(device), MeasuredCeilings{probe_matmul_ceilings(device), 0}).first;
    const PrecisionRoofline& c = it->second.ceilings.of(precision);
    peak.tflops = c.best.tflops;
    peak.measured = true;
    peak.basis = fmt::format("measured roofline: {}x{}x{} {} {} matmul, the best of {} calls at n {} in {} rounds",
                             c.best.n, c.best.n, c.best.k.value_or(c.best.n), c.best.layout.value_or("?"),
                             precision_name(precision), c.best.reps,
                             fmt::join(matmul_probe_sizes(device), "/"), c.tflops_per_round.size());
  }
  return peaks().emplace(key, peak).first->second;
}

void set_flop_counters(benchmark::State& state, double flops_per_iter, double timed_s, const torch::Device& device,
                       Precision precision) {
  state.counters["flop_per_s"] = benchmark::Counter(flops_per_iter, benchmark::Counter::kIsIterationInvariantRate);
  if (timed_s <= 0 || state.iterations() == 0) return;
  const double achieved = flops_per_iter * double(state.iterations()) / timed_s;
  Peak peak = matmul_peak(device, precision);
  while (peak.measured && achieved > peak.tflops * 1e12 && reprobe(device)) peak = matmul_peak(device, precision);
  state.counters["peak_tflops"] = peak.tflops;
  state.counters["pct_of_peak"] = 100.0 * achieved / (peak.tflops * 1e12);
  state.SetLabel(fmt::format("{}; peak: {}", g_label, peak.basis));
}

void set_byte_counters(benchmark::State& state, double bytes_per_iter) {
  state.counters["bytes_per_s"] = benchmark::Counter(bytes_per_iter, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- precision ----------------------------------------------------------------

torch::ScalarType dtype_for(Precision p) { return p == Precision::kBF16 ? torch::kBFloat16 : torch::kFloat32; }

MatmulPrecisionScope::MatmulPrecisionScope(const torch::Device& device, Precision p) : device_(device) {
  if (p == Precision::kTF32) {
    const PrecisionEffect e = enable_tf32(device);
    effective_ = e.effective;
    reason_ = e.reason;
  } else {
    disable_tf32(device);
  }
}

MatmulPrecisionScope::~MatmulPrecisionScope() { disable_tf32(device_); }

// ---- families -----------------------------------------------------------------

benchmark::internal::Benchmark* add_benchmark(const std::string& name, std::function<void(benchmark::State&)> fn) {
  auto body = [fn = std::move(fn)](benchmark::State& state) {
    try {
      fn(state);
    } catch (const std::exception& e) {
      // An OOM or a LibTorch error: reported on this benchmark, the run goes on.
      state.SkipWithError(fmt::format("failed: {}", e.what()).c_str());
    }
  };
  return benchmark::RegisterBenchmark(name.c_str(), body)->UseManualTime()->Unit(benchmark::kMillisecond);
}

}  // namespace ladder::micro
