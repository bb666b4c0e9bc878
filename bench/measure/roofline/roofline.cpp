// bench/measure/roofline/roofline.cpp: see roofline.h.
#include "bench/measure/roofline/roofline.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iterator>
#include <map>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "bench/measure/device/device.h"
#include "profiler/common/atomic_file.h"
#include "profiler/common/cli.h"
#include "reports/model/report/report.h"
#include "reports/model/report/report_loader.h"  // read_json_file
#include "variants/planners/gemm_candidates.h"
#include "variants/config/precision.h"
#include "variants/config/precision_name.h"

namespace ladder {

namespace {

// The three layouts of a linear layer's GEMMs: the input gradient dy @ w
// (a@b), the forward x @ w^T (a@b^T) and the weight gradient dy^T @ x
// (a^T@b). Without oneDNN's bf16 (a CPU without AVX-512) ATen's fallback
// runs them at very different rates: 0.9, 12 and 24 GFLOP/s at n 256 on one
// AVX2 thread (2026-11-29), so a ceiling from one layout alone is no ceiling.
struct Layout {
  const char* name;
  bool transpose_a, transpose_b;
};
constexpr Layout kLayouts[] = {{"a@b", false, false}, {"a@b^T", false, true}, {"a^T@b", true, false}};
constexpr int kMinCalls = 2, kMaxCalls = 200;
// Each size n is probed square (k = n) and, but the largest, with a reduction
// four times as long (k = 4n), as an MLP's c_proj (K = 4C) and a weight
// gradient (K = the tokens) have it: ATen's bf16 fallback's dot products run
// faster the longer they are (n 512, k 4096: 28.4 GFLOP/s against 26.3 square
// at 1024 on two AVX2 threads), and GPT-2's c_proj reached 100.2 % of a
// square-only ceiling. The largest size's long shape would cost four times
// its square one (0.34 s a round in fp32 here) and reached no more.
constexpr int64_t kInnerMultiples[] = {1, 4};
// A shape is skipped when its two calls would take longer than this or the
// probe's time, whichever is more: emulated bf16 still reaches n 1024 in the
// layouts its fallback runs well (0.09 s a call at 24 GFLOP/s on two AVX2
// threads; at n 512 it ran 7 % slower, below what a GPT-2 GEMM reached), and
// skips a@b's (2 s a call).
constexpr double kSlowShapeSeconds = 0.5;

// The operands of one (n, k), drawn once for its three layouts.
struct Operands {
  torch::Tensor x, y;    // (n, k) and (k, n), row-major
  torch::Tensor xt, yt;  // (k, n) and (n, k): their transposes stored row-major, viewed back for a^T and b^T
  torch::Tensor c;       // (n, n)
};

Operands draw_operands(const torch::Device& device, torch::ScalarType dtype, int64_t n, int64_t k) {
  auto opts = torch::TensorOptions().dtype(dtype).device(device);
  Operands o;
  o.x = torch::randn({n, k}, opts);
  o.y = torch::randn({k, n}, opts);
  o.xt = o.x.t().contiguous();
  o.yt = o.y.t().contiguous();
  o.c = torch::empty({n, n}, opts);
  return o;
}

// One shape: the best of >= kMinCalls calls and >= `seconds`, by ATen's mm
// and, on a CPU with oneDNN, by oneDNN's matmul (half the time each).
MatmulShape probe_shape(const Operands& o, int64_t n, int64_t k, const Layout& layout, double seconds,
                        StepTimer& timer) {
  const torch::Tensor a = layout.transpose_a ? o.xt.t() : o.x;  // (n, k), a transposed view or not
  const torch::Tensor b = layout.transpose_b ? o.yt.t() : o.y;  // (k, n)
  torch::Tensor c = o.c;
  const bool onednn = o.c.is_cpu() && gemm::onednn_available();
  const double each = onednn ? seconds / 2 : seconds;
  MatmulShape s;
  s.n = n;
  s.k = k;
  s.layout = layout.name;
  s.tflops = 0.0;
  s.reps = int64_t(0);
  s.via = std::string();
  auto keep = [&](const BestTime& t, const char* via) {
    const double tflops = double(matmul_flops(n, n, k)) / (t.best_ms * 1e-3) / 1e12;
    *s.reps += t.reps;
    if (tflops > *s.tflops) {
      s.tflops = tflops;
      s.via = via;
    }
  };
  keep(best_time(timer, [&] { torch::mm_out(c, a, b); }, kMinCalls, each, kMaxCalls), "aten");
  if (onednn) {
    const GemmChoice onednn_choice{GemmMethod::kOnednn};
    const torch::Tensor w = b.t();  // (n, k): oneDNN's linear computes a w^T
    try {
      keep(best_time(timer, [&] { c = gemm::forward(a, w, onednn_choice); }, kMinCalls, each, kMaxCalls), "onednn");
    } catch (const std::exception&) {  // dnnl::error, or c10::Error
      // oneDNN cannot build this primitive here (a bf16 inner product with its ISA
      // limited to AVX2, ONEDNN_MAX_CPU_ISA): ATen's mm alone sets the ceiling.
    }
  }
  return s;
}

// The shape skipped, saying why.
MatmulShape skipped_shape(int64_t n, int64_t k, const Layout& layout, double predicted_s, int64_t rate_n,
                          double limit_s) {
  MatmulShape s;
  s.n = n;
  s.k = k;
  s.layout = layout.name;
  s.skipped = fmt::format("{} calls would take about {:.2g} s at the rate of n {}, more than {:.2g} s", kMinCalls,
                          predicted_s, rate_n, limit_s);
  return s;
}

}  // namespace

std::vector<int64_t> matmul_probe_sizes(const torch::Device& device) {
  if (device.is_cuda()) return {4096, 8192};
  return {256, 512, 1024};
}

RooflineResult probe_matmul(const torch::Device& device, Precision precision, double seconds,
                            std::vector<int64_t> sizes) {
  torch::NoGradGuard no_grad;
  if (sizes.empty()) sizes = matmul_probe_sizes(device);
  RooflineResult r;
  r.shapes.emplace();
  const auto dtype = precision == Precision::kBF16 ? torch::kBFloat16 : torch::kFloat32;
  r.dtype = precision == Precision::kBF16 ? "bfloat16" : "float32";
  constexpr size_t kGeometries = std::size(kInnerMultiples) * std::size(kLayouts);
  const double per_shape = seconds / double(sizes.size() * kGeometries);
  const double limit_s = std::max(seconds, kSlowShapeSeconds);
  auto timer = make_step_timer(device);
  const auto wall0 = std::chrono::steady_clock::now();
  double rate[kGeometries] = {};  // each geometry's TFLOP/s at the last size it ran
  int64_t rate_n[kGeometries] = {};
  for (const int64_t n : sizes) {
    for (size_t m = 0; m < std::size(kInnerMultiples); ++m) {
      if (m > 0 && n == sizes.back()) break;
      const int64_t k = kInnerMultiples[m] * n;
      const Operands operands = draw_operands(device, dtype, n, k);
      for (size_t l = 0; l < std::size(kLayouts); ++l) {
        const size_t g = m * std::size(kLayouts) + l;
        const double predicted_s = rate[g] > 0 ? kMinCalls * double(matmul_flops(n, n, k)) / (rate[g] * 1e12) : 0;
        const MatmulShape s = predicted_s > limit_s
                                  ? skipped_shape(n, k, kLayouts[l], predicted_s, rate_n[g], limit_s)
                                  : probe_shape(operands, n, k, kLayouts[l], per_shape, *timer);
        r.shapes->push_back(s);
        if (!s.timed()) continue;
        rate[g] = s.rate();
        rate_n[g] = n;
        r.reps += s.reps.value_or(0);
        if (s.rate() > r.tflops) {
          r.tflops = s.rate();
          r.n = s.n;
          r.k = s.k;
          r.layout = s.layout;
        }
      }
    }
  }
  r.probe_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

void keep_best(RooflineResult& best, const RooflineResult& round) {
  if (!best.shapes) best.shapes.emplace();
  std::vector<MatmulShape>& shapes = *best.shapes;
  for (const MatmulShape& s : round.shape_list()) {
    auto it = std::find_if(shapes.begin(), shapes.end(),
                           [&](const MatmulShape& b) { return b.n == s.n && b.k == s.k && b.layout == s.layout; });
    if (it == shapes.end()) {
      shapes.push_back(s);
    } else if (s.timed()) {
      it->reps = it->reps.value_or(0) + s.reps.value_or(0);
      if (!it->timed() || s.rate() > it->rate()) {
        it->tflops = s.rate();
        it->via = s.via;
      }
      it->skipped.reset();
    }
  }
  if (round.tflops > best.tflops) {
    best.tflops = round.tflops;
    best.n = round.n;
    best.k = round.k;
    best.layout = round.layout;
  }
  best.dtype = round.dtype;
  best.reps += round.reps;
  best.probe_ms += round.probe_ms;
}

namespace {
constexpr Precision kOrder[] = {Precision::kFP32, Precision::kTF32, Precision::kBF16};
constexpr int kRounds = 3;
constexpr double kSecondsPerProbe = 0.1;
}  // namespace

const PrecisionRoofline& MatmulCeilings::of(Precision p) const {
  const auto it = precisions.find(precision_name(p));
  if (it == precisions.end()) throw std::logic_error(fmt::format("no matmul ceiling for {}", precision_name(p)));
  return it->second;
}

MatmulCeilings probe_matmul_ceilings(const torch::Device& device) {
  // A ceiling divides every rung's 'p' MFU and every micro-benchmark's
  // pct_of_peak, so one disturbed moment must not lower it: the precisions
  // are probed in interleaved rounds (fp32, tf32, bf16, fp32, ...) and each
  // keeps its best. On this repository's 2-core VM a single 0.3 s probe once
  // measured fp32 at half its ceiling, which put the fp32 rung at 118 % 'p'
  // MFU.
  MatmulCeilings out;
  for (int round = 0; round < kRounds; ++round) {
    for (const Precision p : kOrder) {
      PrecisionRoofline& c = out.precisions[precision_name(p)];
      if (p == Precision::kTF32) {
        const PrecisionEffect tf32 = enable_tf32(device);
        c.tf32_effective = tf32.effective;
        c.tf32_mechanism = tf32.mechanism;
      } else {
        disable_tf32(device);
      }
      const RooflineResult r = probe_matmul(device, p, kSecondsPerProbe);
      c.tflops_per_round.push_back(r.tflops);
      keep_best(c.best, r);
    }
  }
  disable_tf32(device);
  return out;
}

void keep_best(MatmulCeilings& best, const MatmulCeilings& again) {
  for (const auto& [name, c] : again.precisions) {
    PrecisionRoofline& b = best.precisions.at(name);
    keep_best(b.best, c.best);
    b.tflops_per_round.insert(b.tflops_per_round.end(), c.tflops_per_round.begin(), c.tflops_per_round.end());
  }
}

namespace {

// The precisions of a run roofline: the ceilings, with what bf16 was on a CPU.
std::map<std::string, PrecisionRoofline> precisions_of(MatmulCeilings ceilings, const torch::Device& device) {
  if (device.is_cpu()) {
    const std::string emulated = bf16_emulated(layout_tflops(ceilings.of(Precision::kFP32).best, kEmulationLayout),
                                               layout_tflops(ceilings.of(Precision::kBF16).best, kEmulationLayout));
    PrecisionRoofline& bf16 = ceilings.of(Precision::kBF16);
    bf16.emulated = !emulated.empty();
    if (!emulated.empty()) bf16.emulated_evidence = emulated;
  }
  return std::move(ceilings.precisions);
}

// A run roofline's device, checked against the device this process runs on
// (its kind is checked when it is read).
void check_roofline_device(const RooflineFile& roofline, const std::string& device_name, const std::string& file) {
  if (roofline.device != device_name)
    throw ConfigError(fmt::format("{}: field 'device' is '{}', but this process runs on '{}'; expected a "
                                  "roofline measured on this device",
                                  file, roofline.device, device_name));
}

}  // namespace

RooflineFile measure_run_roofline(const torch::Device& device, int threads) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  RooflineFile r;
  r.precisions = precisions_of(probe_matmul_ceilings(device), device);
  r.memory = probe_memory_bandwidth(device);
  r.schema_version = kSchemaVersion;
  r.device = device_name(device);
  r.device_spec = device.str();
  r.threads = threads;
  r.measured_at = utc_now_iso8601();
  r.method = fmt::format("matmuls (n x k) @ (k x n), k = n and 4n, in three layouts (a@b, a@b^T, a^T@b) at n {}, by "
                         "ATen's mm and, on a CPU, oneDNN's matmul (the faster counts; shapes[].via), "
                         "{} interleaved rounds of >= {} s per precision (fp32, tf32, bf16, then again), the "
                         "best call of all; then the memory bandwidth (memory.method); measured once per run "
                         "before the rungs",
                         fmt::join(matmul_probe_sizes(device), ", "), kRounds, kSecondsPerProbe);
  return r;
}

RooflineFile read_roofline_file(const std::string& path) { return roofline_file_from(read_json_file(path), path); }

RooflineInUse read_roofline_in_use(const std::string& file) {
  RooflineInUse out;
  out.file = file;
  if (file.empty()) return out;
  try {
    out.roofline = read_roofline_file(file);
  } catch (const std::exception& e) {
    out.error = e.what();
    out.missing = !std::filesystem::exists(file);
  }
  return out;
}

RooflineResult run_roofline_entry(const RooflineFile& roofline, Precision precision, const std::string& device_name,
                                  const std::string& file) {
  const char* name = precision_name(precision);
  check_roofline_device(roofline, device_name, file);
  const PrecisionRoofline* e = roofline.precision(name);
  if (!e || !(e->best.tflops > 0))
    throw ConfigError(fmt::format("{}: field 'precisions.{}.matmul_tflops' is missing or not > 0; expected the "
                                  "measured TFLOP/s",
                                  file, name));
  RooflineResult r = e->best;
  r.k = r.k.value_or(r.n);
  r.layout = r.layout.value_or("");
  r.shapes.emplace();
  return r;
}

MemoryBandwidth run_roofline_memory(const RooflineFile& roofline, const std::string& device_name,
                                    const std::string& file) {
  check_roofline_device(roofline, device_name, file);
  if (!roofline.memory)
    throw ConfigError(fmt::format("{}: field 'memory' is missing, expected the object of the bandwidth probe "
                                  "(measured by this build's 'ladder roofline')",
                                  file));
  return *roofline.memory;
}

namespace {
// "a@b: bf16 0.182 vs fp32 0.333 TFLOP/s, 0.55x < 1x" when bf16 is below `ratio` of fp32, else "".
std::string bf16_below(double fp32_tflops, double bf16_tflops, double ratio) {
  if (!(fp32_tflops > 0) || !(bf16_tflops >= 0) || bf16_tflops >= ratio * fp32_tflops) return "";
  return fmt::format("{}: bf16 {:.3g} vs fp32 {:.3g} TFLOP/s, {:.2g}x < {}x", kEmulationLayout, bf16_tflops,
                     fp32_tflops, bf16_tflops / fp32_tflops, ratio);
}
}  // namespace

std::string bf16_emulated(double fp32_tflops, double bf16_tflops) {
  return bf16_below(fp32_tflops, bf16_tflops, kEmulatedBf16Ratio);
}

std::string bf16_slower(double fp32_tflops, double bf16_tflops) {
  return bf16_below(fp32_tflops, bf16_tflops, kCpuBf16MinRatio);
}

double layout_tflops(const RooflineResult& r, const std::string& layout) {
  if (r.shape_list().empty()) return r.tflops;  // a probe of a build before the shapes: one 1024^3 a@b
  double best = 0;
  for (const auto& s : r.shape_list())
    if (s.layout == layout && s.timed()) best = std::max(best, s.rate());
  return best;
}

std::string cpu_bf16_slower(const std::optional<RooflineFile>& roofline, const torch::Device& device) {
  if (!device.is_cpu()) return "";
  if (roofline) {
    const auto rate = [&](Precision p) {
      const PrecisionRoofline* e = roofline->precision(precision_name(p));
      return e ? layout_tflops(e->best, kEmulationLayout) : 0.0;
    };
    const std::string why = bf16_slower(rate(Precision::kFP32), rate(Precision::kBF16));
    return why.empty() ? why : why + ", the run's roofline";
  }
  // n 512: an emulated bf16 matmul takes 0.02-0.3 s there by layout, a native one ~1 ms. Both
  // precisions interleaved over three rounds, the best of each: a single fp32-then-bf16 probe of
  // 50 ms each found this Xeon's bf16 as fast as fp32 (the first calls start the thread pool),
  // against 0.54x in the run's roofline, and a rerun of a cell then ran bf16 where its run had not.
  disable_tf32(device);
  RooflineResult fp32, bf16;
  for (int round = 0; round < 3; ++round) {
    keep_best(fp32, probe_matmul(device, Precision::kFP32, 0.03, {512}));
    keep_best(bf16, probe_matmul(device, Precision::kBF16, 0.03, {512}));
  }
  const std::string why =
      bf16_slower(layout_tflops(fp32, kEmulationLayout), layout_tflops(bf16, kEmulationLayout));
  return why.empty() ? why : why + ", probed at n 512";
}

void resolve_cpu_bf16(RunConfig& c, const std::optional<RooflineFile>& roofline, const torch::Device& device) {
  if (device.is_cpu() && c.sw.on(switches::bf16) && c.cpu_bf16 == "auto") c.cpu_bf16_slower = cpu_bf16_slower(roofline, device);
}

namespace {

// What `ladder roofline` prints: each precision's matmul rate, then each
// working set's copy and triad bandwidth, the largest marked DRAM.
void print_roofline(const RooflineFile& roof) {
  fmt::print("roofline of {} ({} threads):\n", roof.device, roof.threads);
  for (const auto& [name, e] : roof.precisions)
    fmt::print("  {:<5} {:>9.3f} TFLOP/s  (n {} k {} {}, {} reps, {}){}\n", name, e.best.tflops, e.best.n,
               e.best.k.value_or(e.best.n), e.best.layout.value_or("?"), e.best.reps, e.best.dtype,
               e.tf32_effective && !*e.tf32_effective ? ", tf32 not effective here" : "");
  if (!roof.memory) return;
  const MemoryBandwidth& m = *roof.memory;
  fmt::print("  memory bandwidth, GB/s (STREAM's bytes; last-level cache {}):\n",
             m.llc_bytes ? fmt::format("{:.3g} MiB", double(*m.llc_bytes) / (1 << 20)) : "unknown");
  fmt::print("  {:>12}  {:>8}  {:>8}  {:>8}\n", "working set", "copy", "triad", "update");
  for (const auto& s : m.sizes)
    fmt::print("  {:>8.4g} MiB  {:>8.1f}  {:>8.1f}  {:>8.1f}{}\n", double(s.working_set_bytes) / (1 << 20), s.copy_gbps,
               s.triad_gbps, s.update_gbps.value_or(0.0), &s == &m.dram() ? "  DRAM" : "");
  if (m.datasheet)
    fmt::print("  datasheet {:.0f} GB/s ({}, {})\n", m.datasheet->gbps, m.datasheet->device, m.datasheet->source);
  fmt::print("  memory probe {:.0f} ms\n", m.probe_ms);
}

}  // namespace

int roofline_command(const std::vector<std::string>& args) {
  std::string device_spec = default_device_spec(), out;
  int64_t threads = 0;
  bool quiet = false;
  ArgParser ap("roofline",
               "Measure the device's two ceilings: the dense-matmul rate at fp32, tf32 and bf16 (matmuls\n"
               "at a few sizes and layouts, the best call), the denominator of MFU 'p', and the memory\n"
               "bandwidth (STREAM's copy and triad from cache-resident sizes to well past the last-level\n"
               "cache). 'ladder run' measures them once per run, before the rungs, into\n"
               "<run_dir>/roofline.json.");
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
  const RooflineFile roof = measure_run_roofline(device, int(threads));
  if (!out.empty()) write_file_atomically(out, fields::to_json(roof).dump(2) + "\n");
  if (!quiet) print_roofline(roof);
  return 0;
}

}  // namespace ladder
