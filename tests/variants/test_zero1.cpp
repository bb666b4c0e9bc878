// tests/variants/test_zero1.cpp: how ZeRO-1 cuts the parameters into the ranks' ranges
// (variants/ddp/zero1.h). Its maths against the ddp rung is checked end to
// end over two Gloo ranks at GPT-2's width (tests/e2e/e2e_ddp.py zero1).
#include <gtest/gtest.h>

#include <vector>

#include "variants/config/config.h"
#include "variants/ddp/zero1.h"
#include "variants/model/model.h"

namespace ladder {
namespace {

// The elements each rank's pieces cover.
std::vector<int64_t> covered(const std::vector<std::vector<ShardPiece>>& ranges) {
  std::vector<int64_t> n;
  for (const auto& r : ranges) n.push_back(shard_elements(r));
  return n;
}

TEST(Zero1, EqualRangesCutAcrossTensors) {
  // 5 + 10 + 1 + 8 = 24 elements over 3 ranks: 8 each, [0,8) [8,16) [16,24).
  const auto r = shard_ranges({5, 10, 1, 8}, 3);
  ASSERT_EQ(r.size(), 3u);
  auto piece = [](const ShardPiece& p) { return std::vector<int64_t>{int64_t(p.index), p.begin, p.end}; };
  ASSERT_EQ(r[0].size(), 2u);
  EXPECT_EQ(piece(r[0][0]), (std::vector<int64_t>{0, 0, 5}));
  EXPECT_EQ(piece(r[0][1]), (std::vector<int64_t>{1, 0, 3}));
  ASSERT_EQ(r[1].size(), 2u);
  EXPECT_EQ(piece(r[1][0]), (std::vector<int64_t>{1, 3, 10}));  // 7 elements, then tensor 2's one
  EXPECT_EQ(piece(r[1][1]), (std::vector<int64_t>{2, 0, 1}));
  ASSERT_EQ(r[2].size(), 1u);
  EXPECT_EQ(piece(r[2][0]), (std::vector<int64_t>{3, 0, 8}));
  EXPECT_EQ(covered(shard_ranges({5, 10, 1, 8}, 3)), (std::vector<int64_t>{8, 8, 8}));
}

TEST(Zero1, TheLastRangeEndsAtTheTotalAndARankMayHoldNothing) {
  EXPECT_EQ(covered(shard_ranges({7}, 2)), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(covered(shard_ranges({2}, 4)), (std::vector<int64_t>{1, 1, 0, 0}));
  EXPECT_EQ(covered(shard_ranges({3, 3}, 1)), (std::vector<int64_t>{6}));
  EXPECT_THROW(shard_ranges({1}, 0), c10::Error);
}

TEST(Zero1, Gpt2SmallSplitsEvenlyWhateverItsTensors) {
  // The embedding is a third of the model: whole tensors per rank could not
  // balance 8 ranks; equal ranges hold ceil(N / R) each, every element once.
  ModelConfig cfg = find_preset("gpt2-124m").model;
  cfg.vocab_size = 50304;
  GPT model(cfg, ModelOptions{});
  std::vector<int64_t> numels;
  int64_t total = 0;
  for (const auto& p : model->parameters()) {
    numels.push_back(p.numel());
    total += p.numel();
  }
  for (int world : {2, 3, 8}) {
    const auto ranges = shard_ranges(numels, world);
    const std::vector<int64_t> n = covered(ranges);
    int64_t sum = 0;
    for (int r = 0; r < world; ++r) {
      sum += n[size_t(r)];
      EXPECT_LE(n[size_t(r)], (total + world - 1) / world) << world;
      EXPECT_GE(n[size_t(r)], total / world - world) << world;
    }
    EXPECT_EQ(sum, total) << world;
    // Pieces follow each other: every tensor covered from 0 to its end, in order.
    std::vector<int64_t> next(numels.size(), 0);
    for (const auto& rank : ranges)
      for (const ShardPiece& p : rank) {
        EXPECT_EQ(p.begin, next[p.index]);
        next[p.index] = p.end;
      }
    EXPECT_EQ(next, numels) << world;
  }
}

}  // namespace
}  // namespace ladder
