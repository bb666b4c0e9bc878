// variants/ddp/comm_observer.h: what the ddp rung's gradient sync tells about
// its all-reduce, inside the backward phase (variants/ddp/grad_sync.h), and
// ZeRO-1 about its parameter gather, in the optimizer phase
// (variants/ddp/zero1.h). The harness's clock of the step's communication
// listens (bench/measure/harness/harness.cpp); the base class hears nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

namespace ladder {

class CommObserver {
 public:
  virtual ~CommObserver() = default;
  // Bucket `bucket` (`bytes`) handed to the all-reduce.
  virtual void launched(int bucket, int64_t bytes) {}
  // Its result is ready; may be called from a communication thread.
  virtual void done(int bucket) {}
  // Backward's compute is over; the step waits for the buckets.
  virtual void wait_begins() {}
  // Under NCCL the host callbacks above fire at enqueue, so the sync also
  // hands over a reader of its device-side figures (all-reduce busy ms,
  // exposed ms), valid once the step's device work is done.
  virtual void device_timing(std::function<std::pair<double, double>()> read) {}
  // ZeRO-1: `bytes` of parameters gathered (broadcast from their owners) in
  // `host_ms`, from the first launch to the host's return from the last
  // wait; nothing else runs meanwhile, so all of it is exposed.
  virtual void gathered(int64_t bytes, double host_ms) {}
};

}  // namespace ladder
