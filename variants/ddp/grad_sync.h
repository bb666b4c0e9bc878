// variants/ddp/grad_sync.h: DDP's job, done with c10d: bucketed gradient
// all-reduce overlapped with backward.
//
// LibTorch C++ has no DistributedDataParallel, so this is its Reducer in
// small:
//  - parameters are grouped into buckets in reverse order (the order backward
//    produces gradients); the first bucket is capped at 1 MiB so communication
//    starts early, the others at bucket_cap_bytes (25 MB by default), as in
//    PyTorch's DDP;
//  - each parameter's .grad is a view into its bucket's flat buffer, so
//    autograd accumulates straight into what is all-reduced (DDP's
//    gradient_as_bucket_view) and nothing is copied;
//  - a post-accumulate-grad hook on every parameter counts it ready; when a
//    bucket is complete it is divided by the world size and its asynchronous
//    all-reduce is launched at once, while backward goes on with the earlier
//    layers. Buckets launch in index order on every rank, as collectives must;
//  - finish() orders the optimizer after every bucket (gradients are then
//    averaged on all ranks). Under NCCL, with defer_host_wait, that is a
//    stream wait, so the host goes on to enqueue clip and the optimizer while
//    the last buckets are in flight; await() then checks, on the host and
//    with the timeout, that they completed. finish() waits on the host itself
//    under Gloo; and without defer_host_wait, which the step sets only for
//    the fused AdamW and not when the phases are timed with device
//    synchronisations (which would hang on a dead rank before await): the
//    per-parameter one launches ~1,200 kernels, more than CUDA's launch
//    queue holds, so behind a stream wait on a dead rank the host would
//    block inside a launch, with no timeout;
//  - on an accumulation micro-step that is not the last, prepare(sync=false)
//    turns the hooks off, so gradients only accumulate locally (no_sync).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/torch.h>

#include "variants/config/switch_effect.h"
#include "variants/ddp/comm_observer.h"
#include "variants/ddp/cuda/nccl_backend.h"
#include "variants/ddp/process_group.h"
#include "variants/ops/work.h"

namespace ladder {

class GradientSync {
 public:
  // `params` in model order; all on one device and of one dtype.
  GradientSync(const std::vector<torch::Tensor>& params, ProcessGroup& pg, int64_t bucket_cap_bytes,
               bool defer_host_wait);
  ~GradientSync();

  // Before a micro-step's backward: all-reduce during it (the last micro-step
  // of a step) or only accumulate (no_sync). Comm events go to `comm`, which
  // must outlive the step (its done() may come from a communication thread).
  void prepare(bool sync, CommObserver& comm);
  // After a synced backward: launch any bucket whose gradients never came
  // (unused parameters), then order the current stream after all of them.
  // Throws with the failing bucket, step and the census of ranks when a
  // collective fails or times out.
  void finish(int64_t step);
  // After the optimizer is enqueued: the host's deadline check of what
  // finish() left to the stream (nothing when finish() waited itself). Throws
  // as finish() does. Call it before anything synchronises the device.
  void await();
  // Zeroes the gradient buffers in place (grads stay bucket views).
  void zero_grads();

  // Buckets (count, bytes, parameters each) and the event order of the first
  // synced backward: "ready <param>" and "launch bucket <i>" entries.
  GradSyncFacts describe() const;

  // Called by the per-parameter hooks.
  void on_grad_ready(size_t param_index);

 private:
  struct Bucket;
  void launch(size_t b);
  static std::string bucket_what(size_t bucket, int64_t step);

  ProcessGroup& pg_;
  std::vector<torch::Tensor> params_;
  std::vector<std::string> param_names_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<size_t> bucket_of_param_;
  size_t next_launch_ = 0;
  bool sync_ = false;
  CommObserver* comm_ = nullptr;
  bool defer_host_wait_;
  int64_t awaiting_step_ = -1;  // finish() left the host's wait to await()
  bool logging_ = true;  // the first synced backward's event order
  std::vector<std::string> event_order_;
  int64_t bucket_cap_bytes_;
  std::unique_ptr<DeviceCommTimer> device_timer_;  // NCCL only
};

// The ddp rung's collectives in a step's work (variants/ops/work.h): the
// gradients' all-reduce (with zero1 a reduce-scatter and the parameters'
// all-gather, the same bytes), once per optimizer step. A ring moves
// 2 (W - 1) / W of the P fp32 gradients through each rank's link, half each
// way; that over the bus bandwidth the all-reduce micro-benchmark measures is
// its floor. None on one rank.
void add_collective_work(const WorkShape& shape, const WorkFlags& flags, WorkList& work);

}  // namespace ladder
