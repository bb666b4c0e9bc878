// variants/ddp/cuda/nccl_backend.h: the NCCL adapter of the ddp rung (one GPU
// per rank). Built with NCCL only; the CPU build answers with a clear error.
#pragma once

#include <chrono>
#include <memory>

#include <torch/torch.h>

namespace c10d {
class Store;
class Backend;
}  // namespace c10d

namespace ladder {

// c10d's ProcessGroupNCCL on CUDA device `device_index`, which becomes the
// current device first (so barrier() and NCCL's communicators do not guess),
// with collective timing on (each work's device duration, getDuration()).
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int world_size,
                                                    std::chrono::milliseconds timeout, int device_index);

// Device-side timing of one backward's gradient all-reduce under NCCL, whose
// works complete their futures when enqueued (so host callbacks time
// nothing). Events on the compute stream: when backward's compute ends, and
// when that stream may go on after the last bucket's wait; the difference is
// the exposed communication. Read after the step's device work is done.
class DeviceCommTimer {
 public:
  virtual ~DeviceCommTimer() = default;
  virtual void compute_end() = 0;  // before the first bucket's wait
  virtual void waited() = 0;       // after the last one
  virtual double exposed_ms() = 0;
};
// Null in builds without NCCL.
std::unique_ptr<DeviceCommTimer> make_device_comm_timer();

}  // namespace ladder
