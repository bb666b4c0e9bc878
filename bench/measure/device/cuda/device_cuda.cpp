// bench/measure/device/cuda/device_cuda.cpp: CUDA events, caching-allocator statistics and
// device properties for the harness (see device_cuda.h).
#include "bench/measure/device/device_cuda.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>
#ifdef LADDER_WITH_NCCL
#include <nccl.h>
#endif

#include "profiler/common/cuda/cuda_check.h"

namespace ladder::cuda {

void synchronize(int device_index) {
  LADDER_CUDA_CHECK(cudaSetDevice(device_index));
  LADDER_CUDA_CHECK(cudaDeviceSynchronize());
}

namespace {
// Events recorded on LibTorch's current stream, where the step's kernels run.
class EventTimer final : public StepTimer {
 public:
  explicit EventTimer(int device) : device_(device) {
    LADDER_CUDA_CHECK(cudaSetDevice(device_));
    LADDER_CUDA_CHECK(cudaEventCreate(&start_));
    LADDER_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventTimer() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void start() override { LADDER_CUDA_CHECK(cudaEventRecord(start_, stream())); }
  void stop() override { LADDER_CUDA_CHECK(cudaEventRecord(stop_, stream())); }
  double elapsed_ms() override {
    LADDER_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0.f;
    LADDER_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return double(ms);
  }
  const char* method() const override { return "cuda_events"; }

 private:
  cudaStream_t stream() const {
    return c10::cuda::getCurrentCUDAStream(c10::DeviceIndex(device_)).stream();
  }
  int device_;
  cudaEvent_t start_{}, stop_{};
};
}  // namespace

std::unique_ptr<StepTimer> make_event_timer(int device_index) {
  return std::make_unique<EventTimer>(device_index);
}

void release_cached_memory(int device_index) {
  synchronize(device_index);
  c10::cuda::CUDACachingAllocator::emptyCache();
}

void reset_memory_peaks(int device_index) {
  synchronize(device_index);
  c10::cuda::CUDACachingAllocator::resetPeakStats(c10::DeviceIndex(device_index));
  c10::cuda::CUDACachingAllocator::resetAccumulatedStats(c10::DeviceIndex(device_index));
}

void reset_peak_stats(int device_index) {
  c10::cuda::CUDACachingAllocator::resetPeakStats(c10::DeviceIndex(device_index));
}

MemoryStats read_memory(int device_index) {
  using c10::CachingAllocator::StatType;
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(c10::DeviceIndex(device_index));
  const auto agg = static_cast<size_t>(StatType::AGGREGATE);
  MemoryStats m;
  m.peak_allocated_bytes = stats.allocated_bytes[agg].peak;
  m.peak_reserved_bytes = stats.reserved_bytes[agg].peak;
  m.peak_active_bytes = stats.active_bytes[agg].peak;
  m.alloc_retries = stats.num_alloc_retries;
  m.ooms = stats.num_ooms;
  cudaDeviceProp prop{};
  LADDER_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_index));
  m.device_total_bytes = int64_t(prop.totalGlobalMem);
  return m;
}

namespace {
cudaDeviceProp properties(int device_index) {
  cudaDeviceProp prop{};
  LADDER_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_index));
  return prop;
}
}  // namespace

int64_t total_memory(int device_index) { return int64_t(properties(device_index).totalGlobalMem); }

int64_t l2_cache_bytes(int device_index) { return int64_t(properties(device_index).l2CacheSize); }

std::string name(int device_index) { return properties(device_index).name; }

DeviceDescription describe(int device_index) {
  int count = 0, driver = 0, runtime = 0;
  LADDER_CUDA_CHECK(cudaGetDeviceCount(&count));
  LADDER_CUDA_CHECK(cudaDriverGetVersion(&driver));
  LADDER_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  cudaDeviceProp prop{};
  LADDER_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_index));
  auto version = [](int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); };
  DeviceDescription d;
  d.kind = "cuda";
  d.index = int64_t(device_index);
  d.name = prop.name;
  d.count = count;
  d.compute_capability = fmt::format("{}.{}", prop.major, prop.minor);
  d.multiprocessors = int64_t(prop.multiProcessorCount);
  d.memory_bytes = int64_t(prop.totalGlobalMem);
  d.driver_cuda_version = version(driver);
  d.cuda_runtime_version = version(runtime);
  const auto& hooks = at::detail::getCUDAHooks();
  d.cudnn_version = hooks.hasCuDNN() ? std::optional<int64_t>(hooks.versionCuDNN()) : std::nullopt;
  // The libcublasLt this process loaded (variants/cuda/cublaslt_matmul.cpp
  // calls it directly; LibTorch's libcublas calls into the same one).
  d.cublaslt_version = int64_t(cublasLtGetVersion());
#ifdef LADDER_WITH_NCCL
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) d.nccl_version = int64_t(nccl);
#endif
  return d;
}

}  // namespace ladder::cuda
