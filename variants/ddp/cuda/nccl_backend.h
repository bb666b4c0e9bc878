// variants/ddp/cuda/nccl_backend.h: the NCCL adapter of the ddp rung (one GPU
// per rank). Built with NCCL only; the CPU build answers with a clear error.
#pragma once

#include <chrono>

#include <torch/torch.h>

namespace c10d {
class Store;
class Backend;
}  // namespace c10d

namespace ladder {

// c10d's ProcessGroupNCCL on the current CUDA device.
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int world_size,
                                                    std::chrono::milliseconds timeout);

}  // namespace ladder
