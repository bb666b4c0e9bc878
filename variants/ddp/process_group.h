// variants/ddp/process_group.h: the c10d process group the ddp rung runs on.
//
// A TCPStore rendezvous at MASTER_ADDR:MASTER_PORT (rank 0 hosts it), then
// c10d's own backends: Gloo on CPU, NCCL on CUDA (one GPU per rank). Nothing
// of the transport is ours. The store also carries the few strings ranks
// exchange outside collectives (per-rank metrics for rank 0's report, and the
// census that names a dead or hung rank after a collective fails).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/torch.h>

namespace ladder {

struct DistOptions {
  int rank = 0, world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  bool store_is_hosted = false;   // the launcher serves the store (torchrun): rank 0 is a client
  double connect_timeout_s = 60;  // rendezvous
  double timeout_s = 300;         // collectives and store reads until set_timeout
  torch::Device device = torch::kCPU;
};

// What one rank handed to one kind of collective: the calls, their payload
// and the bytes this rank puts on the wire for them under the ring model
// (ring_sent_bytes). Payloads are counted, not modelled; what really left the
// host is the interfaces' counters (bench/measure/observers/traffic_monitor.h).
struct CollectiveCount {
  int64_t calls = 0, payload_bytes = 0, sent_bytes = 0;
};
struct TrafficCount {
  CollectiveCount all_reduce, broadcast;
  int64_t payload_bytes() const { return all_reduce.payload_bytes + broadcast.payload_bytes; }
  int64_t sent_bytes() const { return all_reduce.sent_bytes + broadcast.sent_bytes; }
};
TrafficCount operator-(const TrafficCount& a, const TrafficCount& b);

enum class Collective { kAllReduce, kBroadcast };
// The bytes rank `rank` of `world` sends for one collective of `payload`
// bytes on a ring: an all-reduce (reduce-scatter then all-gather) sends
// 2(R-1)/R of the payload from every rank; a broadcast is a pipelined chain
// from the root, which every rank forwards but the last (the one before the
// root). Gloo's broadcast is a tree, which moves the same bytes in all and,
// at two ranks, the same bytes per rank.
int64_t ring_sent_bytes(Collective kind, int64_t payload, int rank, int world, int root = 0);

class ProcessGroup {
 public:
  // Joins the job. A rendezvous that cannot complete within
  // connect_timeout_s (unreachable master, a rank that never comes) throws
  // ConfigError naming the address, the rank and the timeout.
  static std::unique_ptr<ProcessGroup> create(const DistOptions& o);
  ~ProcessGroup();

  int rank() const { return o_.rank; }
  int world_size() const { return o_.world_size; }
  std::string backend_name() const;  // "gloo" or "nccl"
  std::string master() const;        // the rendezvous, "host:port"

  // Sum over ranks, in place, asynchronously: wait() on the result.
  c10::intrusive_ptr<c10d::Work> allreduce_sum(at::Tensor& t);
  // `root`'s values of `t` into `t` on every rank, asynchronously.
  c10::intrusive_ptr<c10d::Work> broadcast(at::Tensor& t, int root);
  // Waits for `work`, blocking the host; if it fails or times out, throws an
  // error that says `what` failed, with the backend's reason and the census
  // of ranks.
  void wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what);
  // Orders the current stream after `work` without blocking the host (NCCL:
  // the stream waits on the collective's end event; Gloo, which has no
  // streams: the same as wait()). A later wait() on the same work is the
  // host's deadline check.
  void order_after(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what);
  // Copies rank 0's values into `tensors` on every rank (one flat transfer).
  void broadcast_from_rank0(const std::vector<at::Tensor>& tensors);
  void barrier();
  // The timeout for collectives and store reads from now on.
  void set_timeout(double seconds);
  double timeout_s() const { return timeout_s_; }

  // What this rank has launched since it joined, counted at each launch
  // (from whichever thread launches: autograd's own on CUDA).
  TrafficCount traffic() const;

  // Store strings under a "ladder/" prefix; get() waits up to the timeout.
  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key);

  // After a collective failed: every surviving rank checks in under `tag`
  // (the same for every rank, whichever collective failed on it);
  // returns a sentence naming the ranks that did not within `window_s` (dead
  // or hung), or saying that rank 0's store is gone.
  std::string census(const std::string& tag, double window_s);

 private:
  explicit ProcessGroup(const DistOptions& o) : o_(o), timeout_s_(o.timeout_s) {}
  [[noreturn]] void fail(const std::string& what, const std::exception& e);
  void count(Collective kind, const at::Tensor& t, int root);
  DistOptions o_;
  double timeout_s_;
  struct Tally {
    std::atomic<int64_t> calls{0}, payload{0}, sent{0};
  };
  Tally all_reduce_, broadcast_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Backend> backend_;
};

std::chrono::milliseconds to_ms(double seconds);

// How long the surviving ranks wait for each other in the census after a
// collective fails with timeout `timeout_s`.
double census_window_s(double timeout_s);
// The timeout handed to NCCL's own watchdog for a ladder timeout of
// `timeout_s`: later than the host's wait (which throws first), its census
// and the failure report, so that the watchdog never takes the process down
// before the report is written.
double nccl_watchdog_timeout_s(double timeout_s);

}  // namespace ladder
