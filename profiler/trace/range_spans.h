// profiler/trace/range_spans.h: when each layer range (names::layer, "layer 3")
// opened and closed, on every thread, on a clock the caller gives: how the
// CUDA breakdown puts each kernel in the layer open at its launch
// (profiler/trace/device_steps.h), as Nsight's nvtx_gpu_proj would.
//
// The ranges are ladder's own (profiler/ranges/range.h: a ScopedRange or
// begin_range, an NVTX range and a RecordFunction user scope at once; with
// --layer-ranges, forward's on the main thread and backward's on the
// autograd thread). A global RecordFunction callback on user scopes hears
// them on every thread while a LayerSpans lives; nothing is recorded when the
// rung opens no layer ranges. One LayerSpans at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace ladder::profiler {

struct RangeSpan {
  std::string name;
  int64_t begin_ticks = 0, end_ticks = 0;
};

class LayerSpans {
 public:
  // `now` reads the clock the spans are in (the kernel collector's ticks).
  explicit LayerSpans(std::function<int64_t()> now);
  ~LayerSpans();
  LayerSpans(const LayerSpans&) = delete;
  LayerSpans& operator=(const LayerSpans&) = delete;

  // The ranges closed so far, in the order they closed.
  std::vector<RangeSpan> spans() const;

  // For the callbacks.
  int64_t now() const { return now_(); }
  void add(RangeSpan s);

 private:
  std::function<int64_t()> now_;
  mutable std::mutex mutex_;
  std::vector<RangeSpan> spans_;
  uint64_t handle_ = 0;
};

}  // namespace ladder::profiler
