// bench/measure/observers/traffic_monitor.h: what a ddp rank sends per step, on the harness's
// observer list (bench/measure/observers/step_observer.h).
//
// Two readings per step, both taken outside the timed region (before and
// after the step; the report's all-reduce of the loss, four bytes, falls
// inside):
// - the collectives this rank launched, counted by its process group: their
//   payloads, and the bytes a ring would make this rank send for them
//   (variants/ddp/process_group.h, ring_sent_bytes);
// - what really left and entered this host: the bytes counters of its
//   network interfaces (/proc/net/dev of the process's network namespace),
//   loopback and ifb mirrors excluded. They count everything the host sends (TCP/IP headers,
//   the store's few strings, other processes' traffic), and ranks that share
//   a host share them; with every rank on one host (loopback) they read 0.
//   On the two hosts of scripts/net-sweep (one rank per network namespace)
//   they are exactly one rank's traffic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/measure/observers/step_observer.h"
#include "variants/ddp/process_group.h"

namespace ladder {

// The bytes counters of the interfaces in a /proc/net/dev text, loopback
// and ifb devices excluded; ok is false when the text has no interface line.
struct NetCounters {
  bool ok = false;
  int64_t rx_bytes = 0, tx_bytes = 0;
  std::vector<std::string> interfaces;
};
NetCounters parse_net_dev(const std::string& text);
// This process's network namespace's (ok false when /proc/net/dev cannot be read).
NetCounters read_net_counters();

class TrafficMonitor final : public StepObserver {
 public:
  explicit TrafficMonitor(const ProcessGroup& pg) : pg_(pg) {}
  void before_step(int64_t step, bool measured) override;
  void after_step(StepRecord& rec, bool measured) override;
  // The interfaces counted (the first reading's).
  const std::vector<std::string>& interfaces() const { return interfaces_; }

 private:
  const ProcessGroup& pg_;
  TrafficCount count0_;
  NetCounters net0_;
  std::vector<std::string> interfaces_;
};

}  // namespace ladder
