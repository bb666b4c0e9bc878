// variants/ddp/cuda/nccl_backend.cpp: c10d::ProcessGroupNCCL for the ddp rung
// (see nccl_backend.h). Compiled only when NCCL is found.
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1  // what LibTorch's CUDA build was compiled with
#endif
#include "variants/ddp/cuda/nccl_backend.h"

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

namespace ladder {

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int world_size,
                                                    std::chrono::milliseconds timeout) {
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, opts);
}

}  // namespace ladder
