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
  // (its default, 3, kills it without cleaning up): ladder's own wait throws
  // first, the surviving ranks take their census and the failure report is
  // written. The watchdog's timeout is later than ladder's for the same
  // reason (nccl_watchdog_timeout_s). A value the user set is kept.
  setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "0", /*overwrite=*/0);
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
