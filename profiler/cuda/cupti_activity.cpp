// profiler/cuda/cupti_activity.cpp: the CUPTI activity collector (see
// profiler/trace/kernel_activity.h). Compiled only with LADDER_WITH_CUPTI; every
// CUPTI call is checked and a failure names the call with file:line.
#include <time.h>

#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <fmt/format.h>

#include "profiler/trace/kernel_activity.h"

#define LADDER_CUPTI_CHECK(expr)                                                             \
  do {                                                                                       \
    const CUptiResult ladder_r_ = (expr);                                                    \
    if (ladder_r_ != CUPTI_SUCCESS) {                                                        \
      const char* ladder_s_ = nullptr;                                                       \
      cuptiGetResultString(ladder_r_, &ladder_s_);                                           \
      throw ::ladder::profiler::KernelActivityUnavailable(                                   \
          fmt::format("{}:{}: {} failed: {} ({}): kernel activity unavailable", __FILE__,    \
                      __LINE__, #expr, ladder_s_ ? ladder_s_ : "unknown CUPTI error",        \
                      int(ladder_r_)));                                                      \
    }                                                                                        \
  } while (0)

namespace ladder::profiler {

namespace {

constexpr CUpti_ExternalCorrelationKind kTagKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
constexpr uint64_t kOptimizerTag = 2, kOtherTag = 1;
constexpr size_t kBufferBytes = 8u << 20;

// CUPTI's buffer callbacks carry no user pointer: the one active collector's
// records live here, guarded by a mutex (CUPTI may call from its own thread).
struct Sink {
  std::mutex mutex;
  std::vector<ActivityRecord> records;
  std::unordered_map<uint32_t, uint64_t> tag_of_correlation;
  std::vector<int64_t> graph_launch_ticks;
  std::vector<LaunchRecord> launches;
  int64_t dropped = 0;
  bool active = false;
};
Sink g_sink;

bool is_graph_launch(const CUpti_ActivityAPI& api) {
  if (api.kind == CUPTI_ACTIVITY_KIND_RUNTIME)
    return api.cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
           api.cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
  return false;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t size,
                               size_t valid_size) {
  std::lock_guard<std::mutex> lock(g_sink.mutex);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        g_sink.records.push_back({DeviceEvent::Kind::kKernel, k->name ? k->name : "?", int64_t(k->start),
                                  int64_t(k->end), k->correlationId, k->streamId, false});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        g_sink.records.push_back({DeviceEvent::Kind::kMemcpy, "Memcpy", int64_t(m->start), int64_t(m->end),
                                  m->correlationId, m->streamId, false});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        g_sink.records.push_back({DeviceEvent::Kind::kMemset, "Memset", int64_t(m->start), int64_t(m->end),
                                  m->correlationId, m->streamId, false});
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* api = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        if (is_graph_launch(*api)) g_sink.graph_launch_ticks.push_back(int64_t(api->start));
        g_sink.launches.push_back({api->correlationId, int64_t(api->start)});
        break;
      }
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto* x = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (x->externalKind == kTagKind) g_sink.tag_of_correlation[x->correlationId] = x->externalId;
        break;
      }
      default:
        break;
    }
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS)
    g_sink.dropped += int64_t(dropped);
  std::free(buffer);
}

constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

class CuptiActivity final : public KernelActivity {
 public:
  CuptiActivity() {
    {
      std::lock_guard<std::mutex> lock(g_sink.mutex);
      if (g_sink.active) throw KernelActivityUnavailable("a CUPTI activity collector is already running");
      g_sink.records.clear();
      g_sink.tag_of_correlation.clear();
      g_sink.graph_launch_ticks.clear();
      g_sink.launches.clear();
      g_sink.dropped = 0;
      g_sink.active = true;
    }
    try {
      LADDER_CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
      for (auto kind : kKinds) {
        LADDER_CUPTI_CHECK(cuptiActivityEnable(kind));
        enabled_.push_back(kind);
      }
      clock_begin_ = sample_clock();
    } catch (...) {
      disable();
      std::lock_guard<std::mutex> lock(g_sink.mutex);
      g_sink.active = false;
      throw;
    }
  }
  ~CuptiActivity() override {
    if (running_) {
      disable();
      cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      std::lock_guard<std::mutex> lock(g_sink.mutex);
      g_sink.active = false;
    }
  }

  int64_t now_ticks() override {
    uint64_t ts = 0;
    LADDER_CUPTI_CHECK(cuptiGetTimestamp(&ts));
    return int64_t(ts);
  }
  void push_phase(bool optimizer) override {
    LADDER_CUPTI_CHECK(cuptiActivityPushExternalCorrelationId(kTagKind, optimizer ? kOptimizerTag : kOtherTag));
  }
  void pop_phase() override {
    uint64_t last = 0;
    LADDER_CUPTI_CHECK(cuptiActivityPopExternalCorrelationId(kTagKind, &last));
  }

  KernelActivityRecords stop() override {
    if (const cudaError_t err = cudaDeviceSynchronize(); err != cudaSuccess)
      throw KernelActivityUnavailable(fmt::format("{}:{}: cudaDeviceSynchronize failed: {}: kernel activity "
                                                  "unavailable", __FILE__, __LINE__, cudaGetErrorString(err)));
    const ClockSample clock_end = sample_clock();
    LADDER_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    disable();
    running_ = false;
    std::lock_guard<std::mutex> lock(g_sink.mutex);
    g_sink.active = false;
    KernelActivityRecords out;
    out.records = std::move(g_sink.records);
    for (auto& r : out.records) {
      auto it = g_sink.tag_of_correlation.find(r.correlation_id);
      r.in_optimizer = it != g_sink.tag_of_correlation.end() && it->second == kOptimizerTag;
    }
    out.graph_launch_ticks = std::move(g_sink.graph_launch_ticks);
    out.launches = std::move(g_sink.launches);
    out.clock_begin = clock_begin_;
    out.clock_end = clock_end;
    out.dropped_records = g_sink.dropped;
    return out;
  }

 private:
  void disable() {
    for (auto kind : enabled_) cuptiActivityDisable(kind);
    enabled_.clear();
  }
  // CUPTI's clock next to CLOCK_MONOTONIC (std::steady_clock's), read at one
  // instant: the middle of two monotonic reads around cuptiGetTimestamp.
  ClockSample sample_clock() {
    auto mono = [] {
      timespec ts{};
      clock_gettime(CLOCK_MONOTONIC, &ts);
      return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    };
    const int64_t a = mono();
    const int64_t ticks = now_ticks();
    const int64_t b = mono();
    return {ticks, a + (b - a) / 2};
  }
  std::vector<CUpti_ActivityKind> enabled_;
  ClockSample clock_begin_;
  bool running_ = true;
};

}  // namespace

std::unique_ptr<KernelActivity> start_kernel_activity() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();  // clear the sticky "no device" error
    throw KernelActivityUnavailable(kNoCudaDevice);
  }
  return std::make_unique<CuptiActivity>();
}

}  // namespace ladder::profiler
