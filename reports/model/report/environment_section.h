// reports/model/report/environment_section.h: a rung report's environment section
// as a struct (profiler/common/fields.h): the host, the device, the library
// versions and the build the rung ran on. Its JSON and its part of
// reports/rung_report.schema.json come from the field lists below;
// bench/measure/device/environment.h fills it, and a PyTorch peer writes the same
// section (scripts/peer.py), read back strictly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/common/fields.h"

namespace ladder {

struct ThreadCounts {
  int64_t intra_op = 0, inter_op = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("intra_op", s.intra_op);
    v("inter_op", s.inter_op);
  }
};

// null: not in this build, or no CUDA device.
struct LibraryVersions {
  std::string libtorch;
  std::optional<std::string> cuda_toolkit_at_build, cuda_runtime, cuda_driver;
  std::optional<int64_t> cudnn, nccl;
  ::ladder::fields::Maybe<std::optional<int64_t>> cublaslt;  // absent in reports from before 2026-11-27
  std::string mkldnn, openmp;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("libtorch", s.libtorch);
    v("cuda_toolkit_at_build", s.cuda_toolkit_at_build);
    v("cuda_runtime", s.cuda_runtime);
    v("cuda_driver", s.cuda_driver);
    v("cudnn", s.cudnn);
    v("nccl", s.nccl);
    v("cublaslt", s.cublaslt,
      "cublasLtGetVersion() of the libcublasLt this process loaded (CUDA builds; it must match LibTorch's "
      "libcublas)");
    v("mkldnn", s.mkldnn);
    v("openmp", s.openmp);
  }
};

struct CpuCacheFacts {
  std::string type;
  int64_t level = 0, size = 0, num_sharing = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("type", s.type);
    v("level", s.level);
    v("size", s.size);
    v("num_sharing", s.num_sharing);
  }
};

// Absent: could not be read.
struct CpuHost {
  ::ladder::fields::Maybe<int64_t> mhz_per_cpu;
  ::ladder::fields::Maybe<std::vector<CpuCacheFacts>> caches;
  ::ladder::fields::Maybe<std::vector<double>> load_avg;
  ::ladder::fields::Maybe<bool> cpu_scaling_enabled;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("mhz_per_cpu", s.mhz_per_cpu);
    v("caches", s.caches);
    v("load_avg", s.load_avg);
    v("cpu_scaling_enabled", s.cpu_scaling_enabled);
  }
};

// What a device says of itself (bench/measure/device/device.h
// describe_device): every device its kind, name, count and memory; a CPU its
// logical cores; a CUDA device its index, properties and the versions of the
// libraries this process loaded.
struct DeviceDescription {
  std::string kind, name;
  int64_t count = 0, memory_bytes = 0;
  ::ladder::fields::Maybe<int64_t> logical_cores;  // a CPU's; absent in reports from before 2026-11-25
  ::ladder::fields::Maybe<int64_t> index, multiprocessors;
  ::ladder::fields::Maybe<std::string> compute_capability, driver_cuda_version, cuda_runtime_version;
  ::ladder::fields::Maybe<std::optional<int64_t>> cudnn_version;  // null: LibTorch has no cuDNN
  ::ladder::fields::Maybe<int64_t> cublaslt_version, nccl_version;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("kind", s.kind, Doc().one_of({"cpu", "cuda"}));
    v("name", s.name);
    v("count", s.count);
    v("memory_bytes", s.memory_bytes);
    v("logical_cores", s.logical_cores);
    v("index", s.index);
    v("compute_capability", s.compute_capability);
    v("multiprocessors", s.multiprocessors);
    v("driver_cuda_version", s.driver_cuda_version);
    v("cuda_runtime_version", s.cuda_runtime_version);
    v("cudnn_version", s.cudnn_version);
    v("cublaslt_version", s.cublaslt_version, "the libcublasLt this process loaded; absent before 2026-11-27");
    v("nccl_version", s.nccl_version);
  }
};

struct EnvironmentSection {
  std::string host, os, cpu_model;
  int64_t cpu_logical_cores = 0;
  std::string cpu_capability;
  ThreadCounts threads;
  DeviceDescription device;  // bench/measure/device/device.h describe_device
  LibraryVersions versions;
  std::string compiler, build_type;
  ::ladder::fields::Maybe<CpuHost> cpu_host;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("host", s.host);
    v("os", s.os);
    v("cpu_model", s.cpu_model);
    v("cpu_logical_cores", s.cpu_logical_cores);
    v("cpu_capability", s.cpu_capability);
    v("threads", s.threads);
    v("device", s.device, "what every device says of itself (bench/measure/device/device.h); a CUDA device says more");
    v("versions", s.versions);
    v("compiler", s.compiler);
    v("build_type", s.build_type);
    v("cpu_host", s.cpu_host,
      "host CPU facts read from /proc and /sys when the run started; absent keys could not be read");
  }
};

}  // namespace ladder
