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

// The schema of environment.device: what every device says of itself; a
// CUDA device says more (bench/measure/device/device.h describe_device).
nlohmann::json device_description_schema();

struct EnvironmentSection {
  std::string host, os, cpu_model;
  int64_t cpu_logical_cores = 0;
  std::string cpu_capability;
  ThreadCounts threads;
  nlohmann::json device = nlohmann::json::object();  // bench/measure/device/device.h describe_device
  LibraryVersions versions;
  std::string compiler, build_type;
  ::ladder::fields::Maybe<CpuHost> cpu_host;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("host", s.host);
    v("os", s.os);
    v("cpu_model", s.cpu_model);
    v("cpu_logical_cores", s.cpu_logical_cores);
    v("cpu_capability", s.cpu_capability);
    v("threads", s.threads);
    v("device", s.device, Doc().shaped(device_description_schema()));
    v("versions", s.versions);
    v("compiler", s.compiler);
    v("build_type", s.build_type);
    v("cpu_host", s.cpu_host,
      "host CPU facts read from /proc and /sys when the run started; absent keys could not be read");
  }
};

}  // namespace ladder
