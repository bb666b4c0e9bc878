// bench/micro/process_groups.h: two ranks of a c10d process group inside one
// process, one thread per rank, for the all-reduce micro-benchmark: Gloo on
// CPU (process_groups.cpp), NCCL over two CUDA devices (the CUDA adapter
// bench/micro/cuda/nccl_pair.cpp). The DDP rung builds its own multi-process groups
// elsewhere; this is only what a collective needs to be timed in isolation.
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/torch.h>

namespace ladder::micro {

struct RankPair {
  std::string backend;                                      // "gloo" or "nccl"
  std::array<c10::intrusive_ptr<c10d::Backend>, 2> ranks;  // world size 2
  std::array<torch::Device, 2> devices{torch::Device(torch::kCPU), torch::Device(torch::kCPU)};
};

// Runs make(0) and make(1) on two threads at once (a rank's constructor or
// first collective waits for its peer) and returns both; rethrows a failure.
std::array<c10::intrusive_ptr<c10d::Backend>, 2> make_on_two_threads(
    const std::function<c10::intrusive_ptr<c10d::Backend>(int rank)>& make);

// Gloo over the loopback interface, both ranks on the CPU, sharing a HashStore.
std::unique_ptr<RankPair> make_gloo_pair(std::chrono::milliseconds timeout);

#ifdef LADDER_WITH_NCCL
// NCCL, rank r on cuda:r; needs two CUDA devices (one device cannot hold two
// NCCL ranks of one communicator).
std::unique_ptr<RankPair> make_nccl_pair(std::chrono::milliseconds timeout);
#endif

}  // namespace ladder::micro
