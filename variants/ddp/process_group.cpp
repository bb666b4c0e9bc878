// variants/ddp/process_group.cpp: TCPStore rendezvous and the c10d backend
// (see process_group.h).
#include "variants/ddp/process_group.h"

#include <csignal>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/utils/tensor_flatten.h>

#include "variants/config/config.h"
#include "variants/ddp/cuda/nccl_backend.h"

namespace ladder {

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(int64_t(seconds * 1000.0));
}

double census_window_s(double timeout_s) { return std::min(5.0, timeout_s / 2); }

double nccl_watchdog_timeout_s(double timeout_s) { return timeout_s + census_window_s(timeout_s) + 30.0; }

namespace {

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

// Gloo's transport device: GLOO_SOCKET_IFNAME names the interface as in
// PyTorch; on one machine loopback; otherwise the interface this host's name
// resolves to.
std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& master_addr) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  if (is_loopback(master_addr)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

std::unique_ptr<ProcessGroup> ProcessGroup::create(const DistOptions& o) {
  // A rank's sockets (the store's, Gloo's pairs) outlive a peer that dies: a
  // write to one raises SIGPIPE, whose default action ended rank 0 before it
  // could report the failure ("killed by signal 13 (Broken pipe)" 0.05 s
  // after rank 1's SIGKILL, ddp.fault_kill, 2026-11-29). Ignored, the write
  // fails with EPIPE, c10d throws, and the step reports the peer as failed.
  std::signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<ProcessGroup> pg(new ProcessGroup(o));
  c10d::TCPStoreOptions so;
  so.port = uint16_t(o.master_port);
  so.isServer = o.rank == 0 && !o.store_is_hosted;
  so.numWorkers = size_t(o.world_size);
  so.waitWorkers = true;
  so.timeout = to_ms(o.connect_timeout_s);
  try {
    auto tcp = c10::make_intrusive<c10d::TCPStore>(o.master_addr, so);
    pg->o_.master_port = int(tcp->getPort());  // the real one when 0 asked for any
    pg->store_ = tcp;
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    throw ConfigError(fmt::format(
        "rank {} of {}: rendezvous at MASTER_ADDR={} MASTER_PORT={} did not complete within "
        "--dist-connect-timeout {} s ({}); expected rank 0 to listen there and all {} ranks to join",
        o.rank, o.world_size, o.master_addr, o.master_port, o.connect_timeout_s, what, o.world_size));
  }
  pg->store_->setTimeout(to_ms(o.timeout_s));
  auto backend_store = c10::make_intrusive<c10d::PrefixStore>("c10d/", pg->store_);
  if (o.device.is_cuda()) {
    pg->backend_ = make_nccl_backend(backend_store, o.rank, o.world_size, to_ms(nccl_watchdog_timeout_s(o.timeout_s)),
                                     o.device.has_index() ? o.device.index() : 0);
  } else {
    auto opts = c10d::ProcessGroupGloo::Options::create(to_ms(o.timeout_s));
    opts->devices.push_back(gloo_device(o.master_addr));
    pg->backend_ = c10::make_intrusive<c10d::ProcessGroupGloo>(backend_store, o.rank, o.world_size, opts);
  }
  return pg;
}

ProcessGroup::~ProcessGroup() = default;

std::string ProcessGroup::master() const { return fmt::format("{}:{}", o_.master_addr, o_.master_port); }

std::string ProcessGroup::backend_name() const { return o_.device.is_cuda() ? "nccl" : "gloo"; }

TrafficCount operator-(const TrafficCount& a, const TrafficCount& b) {
  const auto minus = [](const CollectiveCount& x, const CollectiveCount& y) {
    return CollectiveCount{x.calls - y.calls, x.payload_bytes - y.payload_bytes, x.sent_bytes - y.sent_bytes};
  };
  return {minus(a.all_reduce, b.all_reduce), minus(a.broadcast, b.broadcast)};
}

int64_t ring_sent_bytes(Collective kind, int64_t payload, int rank, int world, int root) {
  if (world <= 1) return 0;
  if (kind == Collective::kAllReduce) return 2 * (world - 1) * payload / world;
  return rank == (root + world - 1) % world ? 0 : payload;
}

void ProcessGroup::count(Collective kind, const at::Tensor& t, int root) {
  Tally& tally = kind == Collective::kAllReduce ? all_reduce_ : broadcast_;
  const int64_t payload = int64_t(t.numel()) * int64_t(t.element_size());
  tally.calls.fetch_add(1, std::memory_order_relaxed);
  tally.payload.fetch_add(payload, std::memory_order_relaxed);
  tally.sent.fetch_add(ring_sent_bytes(kind, payload, o_.rank, o_.world_size, root), std::memory_order_relaxed);
}

TrafficCount ProcessGroup::traffic() const {
  const auto read = [](const Tally& t) {
    return CollectiveCount{t.calls.load(std::memory_order_relaxed), t.payload.load(std::memory_order_relaxed),
                           t.sent.load(std::memory_order_relaxed)};
  };
  return {read(all_reduce_), read(broadcast_)};
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::allreduce_sum(at::Tensor& t) {
  count(Collective::kAllReduce, t, 0);
  std::vector<at::Tensor> one{t};
  return backend_->allreduce(one);
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::broadcast(at::Tensor& t, int root) {
  count(Collective::kBroadcast, t, root);
  std::vector<at::Tensor> one{t};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  return backend_->broadcast(one, opts);
}

void ProcessGroup::wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what) {
  try {
    // With a timeout the wait blocks the host until the collective is done or
    // the timeout passes, then throws: NCCL's wait() without one only makes
    // the current stream wait (order_after), so a dead rank would stall the
    // host in a later synchronisation until NCCL's watchdog killed the
    // process, with no census and no failure report.
    work->wait(to_ms(timeout_s_));
  } catch (const std::exception& e) {
    fail(what, e);
  }
}

void ProcessGroup::order_after(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what) {
  if (!o_.device.is_cuda()) return wait(work, what);
  try {
    work->wait();  // c10d::kNoTimeout: the current stream waits on the collective's end event
  } catch (const std::exception& e) {
    fail(what, e);
  }
}

void ProcessGroup::fail(const std::string& what, const std::exception& e) {
  std::string why = e.what();
  why = why.substr(0, why.find('\n'));
  throw std::runtime_error(fmt::format("rank {} of {}: {} failed ({} backend, timeout {} s): {}; {}", o_.rank,
                                       o_.world_size, what, backend_name(), timeout_s_, why,
                                       census("failure", census_window_s(timeout_s_))));
}

void ProcessGroup::broadcast_from_rank0(const std::vector<at::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> flat{torch::utils::flatten_dense_tensors(tensors)};  // (sum numel,)
  c10d::BroadcastOptions opts;
  opts.rootRank = 0;
  count(Collective::kBroadcast, flat[0], 0);
  backend_->broadcast(flat, opts)->wait();
  const auto parts = torch::utils::unflatten_dense_tensors(flat[0], tensors);
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].copy_(parts[i]);
}

void ProcessGroup::barrier() { backend_->barrier()->wait(); }

void ProcessGroup::set_timeout(double seconds) {
  timeout_s_ = seconds;
  backend_->setTimeout(to_ms(o_.device.is_cuda() ? nccl_watchdog_timeout_s(seconds) : seconds));
  store_->setTimeout(to_ms(seconds));
}

void ProcessGroup::set(const std::string& key, const std::string& value) {
  store_->set("ladder/" + key, std::vector<uint8_t>(value.begin(), value.end()));
}

std::string ProcessGroup::get(const std::string& key) {
  const auto v = store_->get("ladder/" + key);
  return std::string(v.begin(), v.end());
}

std::string ProcessGroup::census(const std::string& tag, double window_s) {
  // The check-in runs on a thread of its own and is given up after the
  // window plus a grace period: a TCPStore read has no deadline of its own
  // (it blocks in recv), so with the link to the store's host cut it would
  // hold this rank until TCP gives up, many minutes later, and the rank
  // would never report. The thread keeps the store alive and is left
  // behind, blocked, when it does not return.
  struct Outcome {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false, unreachable = false;
    std::vector<int> missing;
  };
  auto out = std::make_shared<Outcome>();
  std::thread([out, store = store_, rank = o_.rank, world = o_.world_size, tag, window_s] {
    const auto key = [&](int r) { return fmt::format("ladder/census/{}/{}", tag, r); };
    std::vector<int> missing;
    bool unreachable = false;
    try {
      store->set(key(rank), std::vector<uint8_t>{1});
      const auto deadline = std::chrono::steady_clock::now() + to_ms(window_s);
      do {
        missing.clear();
        for (int r = 0; r < world; ++r)
          if (!store->check({key(r)})) missing.push_back(r);
        if (missing.empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      } while (std::chrono::steady_clock::now() < deadline);
    } catch (const std::exception&) {
      unreachable = true;
    }
    std::lock_guard<std::mutex> g(out->mu);
    out->done = true;
    out->unreachable = unreachable;
    out->missing = std::move(missing);
    out->cv.notify_all();
  }).detach();
  const double grace_s = 2.0;  // the last check's round trip
  std::unique_lock<std::mutex> lk(out->mu);
  if (!out->cv.wait_for(lk, to_ms(window_s + grace_s), [&] { return out->done; }))
    return fmt::format("the rendezvous store at {}:{} (rank 0's host) did not answer within {} s: the link to "
                       "that host is down, or the host hung",
                       o_.master_addr, o_.master_port, window_s + grace_s);
  if (out->unreachable)
    return fmt::format("rank 0, which hosts the rendezvous store at {}:{}, is unreachable: rank 0 "
                       "died or its host went away",
                       o_.master_addr, o_.master_port);
  if (out->missing.empty())
    return "every rank is alive (the failure was in the transport, not a missing rank)";
  std::string ranks;
  for (int r : out->missing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  return fmt::format("rank{} {} did not answer within {} s after the failure: dead or hung",
                     out->missing.size() > 1 ? "s" : "", ranks, window_s);
}

}  // namespace ladder
