// bench/micro/cuda/nccl_pair.cpp: the CUDA adapter of bench/micro/process_groups.h,
// two NCCL ranks of one communicator in one process, rank r on cuda:r.
// Compiled only with LADDER_WITH_NCCL. LibTorch's ProcessGroupNCCL.hpp
// declares nothing without USE_C10D_NCCL, which a LibTorch built with NCCL
// defines for the files that link it; defined here too should one not.
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1
#endif
#include <c10/cuda/CUDAGuard.h>
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "bench/micro/process_groups.h"
#include "variants/config/config.h"

namespace ladder::micro {

std::unique_ptr<RankPair> make_nccl_pair(std::chrono::milliseconds timeout) {
  const auto count = torch::cuda::device_count();
  if (count < 2)
    throw std::runtime_error(fmt::format("NCCL all-reduce between 2 ranks needs 2 CUDA devices, found {}", count));
  auto store = c10::make_intrusive<c10d::HashStore>();
  auto pair = std::make_unique<RankPair>();
  pair->backend = "nccl";
  pair->devices = {torch::Device(torch::kCUDA, 0), torch::Device(torch::kCUDA, 1)};
  pair->ranks = make_on_two_threads([&](int rank) -> c10::intrusive_ptr<c10d::Backend> {
    c10::cuda::CUDAGuard guard{c10::DeviceIndex(rank)};
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, /*size=*/2, opts);
  });
  return pair;
}

}  // namespace ladder::micro
