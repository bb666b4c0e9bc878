// variants/ddp/cuda/nccl_backend.cpp: c10d::ProcessGroupNCCL for the ddp rung
// (see nccl_backend.h). Compiled only when NCCL is found.
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1  // what LibTorch's CUDA build was compiled with
#endif
#include "variants/ddp/cuda/nccl_backend.h"

#include <cstdlib>

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

namespace ladder {

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int world_size,
                                                    std::chrono::milliseconds timeout, int device_index) {
  c10::cuda::set_device(c10::DeviceIndex(device_index));
  // NCCL's watchdog must not take the process down when a collective fails
  // (PyTorch's default, 3, and torchrun's, 1, both kill it): ladder's own wait
  // throws (WorkNCCL::wait tears down explicitly, whatever this says), the
  // surviving ranks take their census and the failure report is written.
  // 2 (clean up only) still has the watchdog abort the communicators on an
  // error or at its timeout, later than ladder's (nccl_watchdog_timeout_s),
  // so a host synchronisation with no ladder deadline (a barrier, a device
  // sync after a rank died) returns instead of hanging. Overwritten: torchrun
  // sets 1 for every worker. TORCH_NCCL_DESYNC_DEBUG or
  // TORCH_DISTRIBUTED_DEBUG=DETAIL make PyTorch use 3 again.
  setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "2", /*overwrite=*/1);
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, opts);
  pg->enableCollectivesTiming();  // start events, so each work's getDuration() is its device time
  return pg;
}

namespace {
class CudaCommTimer final : public DeviceCommTimer {
 public:
  void compute_end() override { compute_end_.record(c10::cuda::getCurrentCUDAStream()); }
  void waited() override { waited_.record(c10::cuda::getCurrentCUDAStream()); }
  double exposed_ms() override {
    if (!compute_end_.isCreated() || !waited_.isCreated()) return 0.0;
    waited_.synchronize();
    return double(compute_end_.elapsed_time(waited_));
  }

 private:
  at::cuda::CUDAEvent compute_end_{cudaEventDefault}, waited_{cudaEventDefault};
};
}  // namespace

std::unique_ptr<DeviceCommTimer> make_device_comm_timer() { return std::make_unique<CudaCommTimer>(); }

}  // namespace ladder
