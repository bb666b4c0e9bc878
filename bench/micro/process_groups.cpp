// bench/micro/process_groups.cpp: the Gloo pair and the two-thread helper
// (see process_groups.h).
#include "bench/micro/process_groups.h"

#include <exception>
#include <thread>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

namespace ladder::micro {

std::array<c10::intrusive_ptr<c10d::Backend>, 2> make_on_two_threads(
    const std::function<c10::intrusive_ptr<c10d::Backend>(int rank)>& make) {
  std::array<c10::intrusive_ptr<c10d::Backend>, 2> ranks;
  std::array<std::exception_ptr, 2> errors;
  auto body = [&](int rank) {
    try {
      ranks[rank] = make(rank);
    } catch (...) {
      errors[rank] = std::current_exception();
    }
  };
  std::thread peer(body, 1);
  body(0);
  peer.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return ranks;
}

std::unique_ptr<RankPair> make_gloo_pair(std::chrono::milliseconds timeout) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  auto pair = std::make_unique<RankPair>();
  pair->backend = "gloo";
  pair->ranks = make_on_two_threads([&](int rank) -> c10::intrusive_ptr<c10d::Backend> {
    auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, /*size=*/2, opts);
  });
  return pair;
}

}  // namespace ladder::micro
