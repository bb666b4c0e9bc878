// bench/micro/allreduce.cpp: the ddp rung's mechanism, the gradient
// all-reduce, between 2 ranks at the bucket sizes DDP would use for the
// preset's parameters (ddp_buckets.h): Gloo on CPU, NCCL on two CUDA devices
// (process_groups.h). Rank 0 is timed on the benchmark's thread while rank 1
// runs the same collectives on its own thread. Checked before timing: each
// rank holds a known pattern, and both must end with the exact sum.
//
// bytes_per_s is the algorithm bandwidth, bucket bytes / time (nccl-tests'
// algbw); with 2 ranks the bus bandwidth busbw = algbw * 2(n-1)/n is the same.
#include "bench/micro/ddp_buckets.h"

#include <algorithm>
#include <exception>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include "bench/micro/families.h"
#include "bench/micro/process_groups.h"

namespace ladder::micro {

std::vector<int64_t> ddp_bucket_bytes(const std::vector<torch::Tensor>& params) {
  const std::vector<size_t> limits = {size_t(c10d::kDefaultFirstBucketBytes), size_t(c10d::kDefaultBucketBytesCap)};
  const std::vector<torch::Tensor> ready_order(params.rbegin(), params.rend());
  const auto [buckets, per_bucket_limits] = c10d::compute_bucket_assignment_by_size(ready_order, limits);
  std::vector<int64_t> bytes;
  for (const auto& bucket : buckets) {
    int64_t b = 0;
    for (size_t i : bucket) b += ready_order[i].numel() * int64_t(ready_order[i].element_size());
    bytes.push_back(b);
  }
  return bytes;
}

std::vector<int64_t> representative_buckets(std::vector<int64_t> b) {
  if (b.empty()) return {};
  std::sort(b.begin(), b.end());
  std::vector<int64_t> picked = {b.front(), b[b.size() / 2], b.back()};
  picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
  return picked;
}

namespace {

constexpr std::chrono::milliseconds kTimeout{120'000};

std::map<std::string, std::unique_ptr<RankPair>>& pairs() {
  static std::map<std::string, std::unique_ptr<RankPair>> m;
  return m;
}

RankPair& pair_for(const torch::Device& device) {
  auto& slot = pairs()[device_tag(device)];
  if (!slot) {
#ifdef LADDER_WITH_NCCL
    slot = device.is_cuda() ? make_nccl_pair(kTimeout) : make_gloo_pair(kTimeout);
#else
    slot = make_gloo_pair(kTimeout);
#endif
  }
  return *slot;
}

void allreduce(RankPair& pair, int rank, torch::Tensor& t) {
  std::vector<torch::Tensor> v{t};
  pair.ranks[rank]->allreduce(v)->wait();
}

// Runs `n` all-reduces of t1 on rank 1's thread while `rank0` runs here.
void with_peer(RankPair& pair, torch::Tensor t1, int64_t n, const std::function<void()>& rank0) {
  std::exception_ptr peer_error, own_error;
  std::thread peer([&] {
    try {
      for (int64_t i = 0; i < n; ++i) allreduce(pair, 1, t1);
    } catch (...) {
      peer_error = std::current_exception();
    }
  });
  try {
    rank0();
  } catch (...) {
    own_error = std::current_exception();
  }
  peer.join();  // a rank left waiting fails after kTimeout
  if (own_error) std::rethrow_exception(own_error);
  if (peer_error) std::rethrow_exception(peer_error);
}

CheckResult check_allreduce(RankPair& pair, int64_t numel) {
  auto pattern = [&](int rank) {
    auto i = torch::arange(numel, torch::kInt64);
    return (rank == 0 ? i.remainder(7) : 2 * i.remainder(5)).to(torch::kFloat32);  // (numel) small integers
  };
  auto want = pattern(0) + pattern(1);  // exact in float32
  auto t0 = pattern(0).to(pair.devices[0]), t1 = pattern(1).to(pair.devices[1]);
  with_peer(pair, t1, 1, [&] { allreduce(pair, 0, t0); });
  return compare_all({{t0, want}, {t1, want}}, tolerance_for(Precision::kFP32),
                     fmt::format("{} all-reduce of 2 ranks against the exact sum, on both ranks", pair.backend));
}

void bench_allreduce(benchmark::State& state, const std::string& name, const torch::Device& device, int64_t bytes,
                     const std::string& role) {
  RankPair& pair = pair_for(device);
  const int64_t numel = bytes / int64_t(sizeof(float));
  const CheckResult& check = check_once(name, [&] { return check_allreduce(pair, numel); });
  if (!passed_check(state, check, role)) return;
  // Zeros stay zeros however often they are summed: no overflow over many iterations.
  auto t0 = torch::zeros({numel}, torch::TensorOptions().device(pair.devices[0]));
  auto t1 = torch::zeros({numel}, torch::TensorOptions().device(pair.devices[1]));
  const int64_t n = 1 + int64_t(state.max_iterations);  // time_iterations' warm-up, then the timed ones
  with_peer(pair, t1, n, [&] { time_iterations(state, pair.devices[0], [&] { allreduce(pair, 0, t0); }); });
  set_byte_counters(state, double(bytes));
}

void register_allreduce(const MicroConfig& cfg) {
  const std::vector<int64_t> buckets = ddp_bucket_bytes(gpt_parameter_shapes(cfg.model));
  const std::vector<int64_t> sizes = representative_buckets(buckets);
  for (const auto& device : cfg.devices) {
    const std::string backend = device.is_cuda() ? "nccl" : "gloo";
    if (device.is_cuda()) {
#ifdef LADDER_WITH_NCCL
      const auto count = torch::cuda::device_count();
      const std::string why =
          count < 2 ? fmt::format("needs 2 CUDA devices for 2 NCCL ranks, found {}", count) : std::string();
#else
      const std::string why = "this build has no NCCL";
#endif
      if (!why.empty()) {
        benchmark::AddCustomContext("ladder.not_run.allreduce/" + device_tag(device), why);
        continue;
      }
    }
    for (int64_t bytes : sizes) {
      const char* role = bytes == sizes.front() ? "smallest" : bytes == sizes.back() ? "largest" : "median";
      const std::string label =
          buckets.size() == 1 ? std::string("the one DDP bucket (limits 1 MiB first, then 25 MiB)")
                              : fmt::format("the {} of {} DDP buckets (limits 1 MiB first, then 25 MiB)", role,
                                            buckets.size());
      const std::string name =
          fmt::format("allreduce/{}/fp32/{}/ranks:2/bytes:{}", backend, device_tag(device), bytes);
      add_benchmark(name, [=](benchmark::State& st) { bench_allreduce(st, name, device, bytes, label); });
    }
  }
}

void teardown_allreduce() { pairs().clear(); }

}  // namespace

extern const Family allreduce_family{"allreduce", "ddp: gradient all-reduce of 2 ranks at DDP's bucket sizes",
                                     register_allreduce, teardown_allreduce, &switches::ddp};

}  // namespace ladder::micro
