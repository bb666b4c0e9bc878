// tests/bench/test_traffic.cpp: what a ddp rank is said to send per step: the ring
// model over counted payloads (variants/ddp/process_group.h) and the host's
// interface counters (bench/measure/observers/traffic_monitor.h). The figures of real runs are
// checked end to end (tests/e2e/e2e_ddp.py zero1, tests/e2e/e2e_launch.py
// twohost_zero1).
#include <gtest/gtest.h>

#include "bench/measure/observers/traffic_monitor.h"
#include "variants/ddp/process_group.h"

namespace ladder {
namespace {

TEST(Traffic, ARingAllReduceSendsTwiceTheShareOfTheOthers) {
  const int64_t n = 124'439'808LL * 4;  // gpt2-124m's fp32 gradients
  EXPECT_EQ(ring_sent_bytes(Collective::kAllReduce, n, 0, 1), 0);
  EXPECT_EQ(ring_sent_bytes(Collective::kAllReduce, n, 0, 2), n);
  EXPECT_EQ(ring_sent_bytes(Collective::kAllReduce, n, 3, 8), 2 * 7 * n / 8);
  for (int r = 0; r < 8; ++r) EXPECT_EQ(ring_sent_bytes(Collective::kAllReduce, n, r, 8), 2 * 7 * n / 8);
}

TEST(Traffic, EveryRankButTheLastOfTheChainForwardsABroadcast) {
  const int64_t n = 1000;
  EXPECT_EQ(ring_sent_bytes(Collective::kBroadcast, n, 0, 1, 0), 0);
  EXPECT_EQ(ring_sent_bytes(Collective::kBroadcast, n, 0, 2, 0), n);  // the root sends
  EXPECT_EQ(ring_sent_bytes(Collective::kBroadcast, n, 1, 2, 0), 0);
  EXPECT_EQ(ring_sent_bytes(Collective::kBroadcast, n, 2, 4, 3), 0);  // the one before root 3
  EXPECT_EQ(ring_sent_bytes(Collective::kBroadcast, n, 3, 4, 0), 0);  // the one before root 0
  // ZeRO-1's gather: R broadcasts of W/R, one from each rank, send (R-1)/R W from every rank,
  // as a ring all-gather does.
  for (int world : {2, 3, 8}) {
    const int64_t w = 24LL * world * 1000;
    for (int rank = 0; rank < world; ++rank) {
      int64_t sent = 0;
      for (int root = 0; root < world; ++root) sent += ring_sent_bytes(Collective::kBroadcast, w / world, rank, world, root);
      EXPECT_EQ(sent, (world - 1) * w / world) << world << " " << rank;
    }
  }
}

TEST(Traffic, CountsDifferencePerKind) {
  TrafficCount a{{3, 300, 150}, {2, 20, 10}}, b{{1, 100, 50}, {1, 5, 5}};
  const TrafficCount d = a - b;
  EXPECT_EQ(d.all_reduce.calls, 2);
  EXPECT_EQ(d.all_reduce.payload_bytes, 200);
  EXPECT_EQ(d.broadcast.payload_bytes, 15);
  EXPECT_EQ(d.sent_bytes(), 100 + 5);
}

constexpr const char* kNetDev =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
    "    lo: 9000000     100    0    0    0     0          0         0  9000000     100    0    0    0     0       0          0\n"
    "  eth0: 1500 10 0 0 0 0 0 0 2500 20 0 0 0 0 0 0\n"
    "  ifb0: 1500 10 0 0 0 0 0 0 1500 10 0 0 0 0 0 0\n"
    "ldr0:   700 7 0 0 0 0 0 0 300 3 0 0 0 0 0 0\n";

TEST(Traffic, InterfaceCountersSkipLoopbackAndMirrors) {
  const NetCounters c = parse_net_dev(kNetDev);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.rx_bytes, 1500 + 700);
  EXPECT_EQ(c.tx_bytes, 2500 + 300);
  EXPECT_EQ(c.interfaces, (std::vector<std::string>{"eth0", "ldr0"}));
}

TEST(Traffic, NoInterfaceLineIsNoReading) {
  EXPECT_FALSE(parse_net_dev("").ok);
  EXPECT_FALSE(parse_net_dev("Inter-|   Receive\n face |bytes\n").ok);
  EXPECT_FALSE(parse_net_dev("  eth0: 1 2 3\n").ok);  // cut short
  // Only loopback: read, nothing counted (ranks that talk over loopback send 0 here).
  const NetCounters lo = parse_net_dev("    lo: 9 1 0 0 0 0 0 0 9 1 0 0 0 0 0 0\n");
  EXPECT_TRUE(lo.ok);
  EXPECT_EQ(lo.tx_bytes, 0);
  EXPECT_TRUE(lo.interfaces.empty());
}

}  // namespace
}  // namespace ladder
