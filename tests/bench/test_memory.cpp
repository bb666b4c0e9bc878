// tests/bench/test_memory.cpp: the analytic memory estimate, and what ZeRO-1 and
// activation checkpointing change in it.
#include <gtest/gtest.h>

#include "bench/measure/report/memory.h"
#include "variants/config/config.h"
#include "variants/config/rungs.h"
#include "variants/switches/switch.h"

namespace ladder {
namespace {

TEST(MemoryEstimate, CountsParametersGradientsAndAdamState) {
  const ModelConfig m = find_preset("tiny").model;  // L2 H2 C64 V1000
  const auto e = estimate_memory(m, 1000, 4, 64);
  EXPECT_EQ(e.parameter_bytes, 4000);
  EXPECT_EQ(e.gradient_bytes, 4000);
  EXPECT_EQ(e.optimizer_state_bytes, 8000);
  // per layer 16*4*64*64 + 2*4*64*64 = 262,144 + 32,768; head 2*4*64*64 + 2*4*64*1000
  const int64_t elems = 2 * (262'144 + 32'768) + (32'768 + 512'000);
  EXPECT_EQ(e.activation_bytes, elems * 4);
  EXPECT_EQ(e.total_bytes, 16000 + elems * 4);
}

TEST(MemoryEstimate, Zero1DividesTheOptimizerStateAndCheckpointingKeepsOneBlock) {
  const ModelConfig m = find_preset("tiny").model;  // L2 H2 C64 V1000
  const auto sharded = estimate_memory(m, 1000, 4, 64, MemoryOptions{/*optimizer_shards=*/4, false});
  EXPECT_EQ(sharded.optimizer_state_bytes, 2000);
  EXPECT_EQ(sharded.optimizer_shards, 4);
  const auto ckpt = estimate_memory(m, 1000, 4, 64, MemoryOptions{1, /*checkpoint_blocks=*/true});
  // 2 block inputs of 4*64*64, one block of 262,144 + 32,768; the head as before.
  const int64_t elems = 2 * 16'384 + (262'144 + 32'768) + (32'768 + 512'000);
  EXPECT_EQ(ckpt.activation_bytes, elems * 4);
  EXPECT_EQ(ckpt.optimizer_state_bytes, 8000);
}

TEST(MemoryEstimate, OptionsComeFromTheRungsSwitches) {
  auto options = [](const std::string& rung, int world) {
    RunConfig c;
    c.sw = parse_rung(rung).sw;
    c.world_size = world;
    return memory_options(c, plan_for(c));
  };
  EXPECT_EQ(options("ddp+zero1", 4).optimizer_shards, 4);
  EXPECT_EQ(options("ddp", 4).optimizer_shards, 1);
  EXPECT_EQ(options("fp32+zero1", 1).optimizer_shards, 1);  // no ranks to shard over
  EXPECT_TRUE(options("fp32+act-ckpt", 1).checkpoint_blocks);
  EXPECT_FALSE(options("fp32", 1).checkpoint_blocks);
}

}  // namespace
}  // namespace ladder
