// reports/model/report/roofline_section.h: the device's measured ceilings as
// structs. The matmul probe (bench/measure/roofline/roofline.h) gives a
// RooflineResult, the bandwidth probe (bandwidth.h) a MemoryBandwidth, and
// `ladder roofline` writes both, per precision, as the run's roofline.json
// (RooflineFile). A rung report's MFU keeps the entry it divided by
// (mfu.measured_roofline.probe), and the run summary the whole file with how
// its probe went (SummaryRoofline). Each lists its fields once
// (profiler/common/fields.h): its JSON, its strict reading back and its part
// of the generated schemas.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "profiler/common/fields.h"

namespace ladder {

using fields::Doc;
using fields::Inline;
using fields::Maybe;

// One shape the matmul probe timed, or passed over (`skipped` says why).
struct MatmulShape {
  int64_t n = 0;       // (n, k) @ (k, n)
  int64_t k = 0;       // n or 4n
  std::string layout;  // "a@b" (both row-major), "a@b^T" (nn.Linear's x @ w^T) or "a^T@b" (its dy^T @ x)
  Maybe<double> tflops;  // its best call; absent when skipped
  Maybe<int64_t> reps;
  // The library call that gave the best: "aten" (torch::mm), or on a CPU
  // "onednn" (oneDNN's matmul, the GEMM plan's onednn candidate), which on
  // some CPUs runs fp32 twice as fast as ATen's (AMD EPYC 9B45-class: 0.47
  // against 0.23 TFLOP/s, 2026-12-03); a ceiling is the faster of the two.
  Maybe<std::string> via;
  Maybe<std::string> skipped;
  bool timed() const { return !skipped; }
  double rate() const { return tflops.value_or(0.0); }
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("n", s.n);
    v("k", s.k);
    v("layout", s.layout);
    v("matmul_tflops", s.tflops);
    v("reps", s.reps);
    v("via", s.via,
      "the call that gave the shape's best: aten (torch::mm) or, on a CPU, onednn (oneDNN's matmul, as the GEMM "
      "plan's onednn candidate); older reports lack it");
    v("skipped", s.skipped);
  }
};

inline constexpr const char* kBestCallStatistic = "best call of every shape";

// A matmul probe of one precision: the best call of every shape, and the
// shape that gave it. Older probes (one square shape) name no k, layout or
// shapes.
struct RooflineResult {
  double tflops = 0;
  int64_t n = 0;
  Maybe<int64_t> k;
  Maybe<std::string> layout;
  int64_t reps = 0;      // timed calls, every shape
  double probe_ms = 0;   // wall time the probe took
  std::string dtype;
  std::string statistic = kBestCallStatistic;
  Maybe<std::vector<MatmulShape>> shapes;
  const std::vector<MatmulShape>& shape_list() const {
    static const std::vector<MatmulShape> kNone;
    return shapes ? *shapes : kNone;
  }
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("matmul_tflops", s.tflops);
    v("n", s.n);
    v("k", s.k, "the best shape's inner dimension: (n, k) @ (k, n), k = n or 4n");
    v("reps", s.reps);
    v("dtype", s.dtype);
    v("probe_ms", s.probe_ms);
    v("statistic", s.statistic);
    v("layout", s.layout,
      "the layout of the best shape: a@b, a@b^T (nn.Linear's x @ w^T) or a^T@b (its weight gradient)");
    v("shapes", s.shapes, "every shape the probe timed (matmul_tflops, reps) or passed over (skipped: why)");
  }
};

// One precision of roofline.json: its probe's best over the rounds, each
// round's rate, and what the precision was on the device.
struct PrecisionRoofline {
  RooflineResult best;
  std::vector<double> tflops_per_round;
  Maybe<bool> tf32_effective;               // tf32's: whether the setting took effect
  Maybe<std::string> tf32_mechanism;
  Maybe<bool> emulated;                     // a CPU's bf16: emulated (bench/measure/roofline/roofline.h)
  Maybe<std::string> emulated_evidence;
  template <class S, class V>
  static void fields(S& s, V& v) {
    RooflineResult::fields(s.best, v);
    v("tflops_per_round", s.tflops_per_round);
    v("tf32_effective", s.tf32_effective);
    v("tf32_mechanism", s.tf32_mechanism);
    v("emulated", s.emulated);
    v("emulated_evidence", s.emulated_evidence);
  }
};

// A datasheet's memory bandwidth (bench/measure/roofline/mfu.h's table).
struct BandwidthEntry {
  std::string device;  // the table's label, e.g. "A100 80GB SXM"
  double gbps = 0;     // memory bandwidth, GB/s (1e9 bytes/s)
  std::string source;  // the datasheet the number comes from
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("gbps", s.gbps, Doc().above(0));
    v("device", s.device);
    v("source", s.source);
  }
};

struct BandwidthAtSize {
  int64_t working_set_bytes = 0;  // every array of one kernel together
  double copy_gbps = 0;           // 1e9 bytes/s, STREAM's count of bytes
  double triad_gbps = 0;
  Maybe<double> update_gbps;      // absent in a roofline.json of a build before it
  int64_t reps = 0;  // the fewest of the kernels' timed repetitions
  double best_gbps() const { return std::max({copy_gbps, triad_gbps, update_gbps.value_or(0.0)}); }
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("working_set_bytes", s.working_set_bytes, Doc().above(0));
    v("copy_gbps", s.copy_gbps, Doc().above(0));
    v("triad_gbps", s.triad_gbps, Doc().above(0));
    v("update_gbps", s.update_gbps,
      Doc("at::_fused_adamw_ in place on four arrays, 7 x array bytes; absent before 2026-11-29").above(0));
    v("reps", s.reps, Doc().min(0));
  }
};

struct MemoryBandwidth {
  std::vector<BandwidthAtSize> sizes;  // ascending working sets; the last is DRAM's (HBM's on a GPU)
  std::optional<int64_t> llc_bytes;    // the last-level cache the sizes follow (CPU: sysfs; CUDA: L2); null unknown
  int64_t threads = 0;                 // a CPU's intra-op threads; 0 on CUDA
  double probe_ms = 0;                 // wall time of the whole probe, buffers included
  std::string method;
  std::optional<BandwidthEntry> datasheet;  // bench/measure/roofline/mfu.h's table, where it knows the device
  // The last size again, written as "dram" for a reader of the JSON: set
  // with the sizes (probe_memory_bandwidth); dram() is what code reads.
  std::optional<BandwidthAtSize> dram_written;
  const BandwidthAtSize& dram() const { return sizes.back(); }
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("method", s.method);
    v("threads", s.threads, Doc().min(0));
    v("llc_bytes", s.llc_bytes, Doc().above(0));
    v("probe_ms", s.probe_ms, Doc().min(0));
    v("sizes", s.sizes);
    v("dram", s.dram_written, "the largest working set's, past the last-level cache");
    v("datasheet", s.datasheet);
  }
};

// The ddp rung's link: the all-reduce micro-benchmark's best bus bandwidth
// (bench/run/runner.cpp, measure_interconnect).
struct InterconnectSection {
  double busbw_gbps = 0;
  int64_t ranks = 0;
  std::string benchmark, method, file;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("busbw_gbps", s.busbw_gbps, Doc().above(0));
    v("ranks", s.ranks, Doc().min(2));
    v("benchmark", s.benchmark);
    v("method", s.method);
    v("file", s.file);
  }
};

inline constexpr const char* kRooflineKind = "ladder.roofline";

// <run_dir>/roofline.json, as `ladder roofline --out` writes it. A file of a
// build before the bandwidth probe has no memory; the run adds the
// interconnect where it has a ddp cell of 2 or more ranks.
struct RooflineFile {
  int64_t schema_version = 0;
  std::string kind = kRooflineKind;
  std::string device, device_spec;
  int64_t threads = 0;
  std::string measured_at, method;
  std::map<std::string, PrecisionRoofline> precisions;  // by precision_name: fp32, tf32, bf16
  Maybe<MemoryBandwidth> memory;
  Maybe<InterconnectSection> interconnect;
  // The entry of `precision`, or null.
  const PrecisionRoofline* precision(const std::string& name) const {
    const auto it = precisions.find(name);
    return it == precisions.end() ? nullptr : &it->second;
  }
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("schema_version", s.schema_version);
    v("kind", s.kind, Doc().one_of({kRooflineKind}));
    v("device", s.device);
    v("device_spec", s.device_spec);
    v("threads", s.threads);
    v("measured_at", s.measured_at);
    v("method", s.method);
    v("precisions", s.precisions);
    v("memory", s.memory,
      "the memory-bandwidth ceiling (bench/measure/roofline/bandwidth.h): STREAM's copy and triad at a ladder of "
      "working sets, ascending; dram is the largest, past the last-level cache");
    v("interconnect", s.interconnect,
      "the ddp rung's link, where the run has a ddp cell of 2 or more ranks: the all-reduce micro-benchmark's best "
      "bus bandwidth (bench/run/runner.cpp: measure_interconnect), the link ceiling of the speed-of-light table");
  }
};

// The run summary's roofline section: how the run's probe went, and on
// status ok the run's roofline.json, its fields beside these.
struct SummaryRoofline {
  std::string status = "not_run";  // ok, failed, not_run
  Maybe<std::string> reason, file;
  Inline<RooflineFile> measured;
  bool ok() const { return status == "ok" && measured.has_value(); }
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("status", s.status, Doc().one_of({"ok", "failed", "not_run"}));
    v("reason", s.reason);
    v("file", s.file);
    v("measured", s.measured);
  }
  // What the fields cannot say: an ok section holds the file's fields.
  static void schema_extra(nlohmann::json& schema);
};

// A MemoryBandwidth read from `file` is usable: at least one size, the sizes
// ascending. Throws ConfigError naming the file, the field and its value.
void check_memory_bandwidth(const MemoryBandwidth& m, const std::string& file);

// roofline.json's JSON read strictly (its kind first, then every field, then
// the memory's sizes); a ConfigError names `file`, the field, its value and
// what was expected.
RooflineFile roofline_file_from(const nlohmann::json& j, const std::string& file);

}  // namespace ladder
