// tests/reports/test_slow_rank.cpp: the slow-rank verdict (reports/model/report/slow_rank.h)
// and its statistics (reports/stats/inference.h median_interval), on values
// whose answers can be worked out by hand.
#include <cmath>

#include <gtest/gtest.h>

#include "reports/model/report/slow_rank.h"
#include "reports/stats/inference.h"

namespace ladder {
namespace {

TEST(MedianInterval, OrderStatisticsAndSignTestAsTheBinomialGivesThem) {
  // n = 10 at 95 %: P(X <= 1) = 11/1024, doubled 0.0215 <= 0.05; P(X <= 2) = 56/1024, doubled 0.109 > 0.05:
  // the interval is [x(2), x(9)].
  const MedianInterval m = median_interval({10, 1, 9, 2, 8, 3, 7, 4, 6, 5});
  EXPECT_DOUBLE_EQ(m.median, 5.5);
  ASSERT_TRUE(m.has_interval);
  EXPECT_DOUBLE_EQ(m.lo, 2);
  EXPECT_DOUBLE_EQ(m.hi, 9);
  EXPECT_NEAR(m.coverage, 1 - 22.0 / 1024, 1e-12);
  EXPECT_NEAR(m.p_value, 2.0 / 1024, 1e-12);  // all ten above 0: the sign test's two-sided p
  EXPECT_NEAR(m.p_above, 1.0 / 1024, 1e-12);  // and one-sided
  EXPECT_NEAR(median_interval({-1, -2, -3, 4, 5, 6, 7, 8, 9, 10}).p_above, 176.0 / 1024, 1e-12);  // P(X <= 3)
  // Nine of ten above 0, one zero dropped: p = 2 P(X <= 0 | n = 9) = 2/512.
  EXPECT_NEAR(median_interval({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}).p_value, 2.0 / 512, 1e-12);
  // Five values cannot give 95 %: 2 P(X <= 0 | n = 5) = 1/16 > 0.05.
  const MedianInterval five = median_interval({1, 2, 3, 4, 5});
  EXPECT_FALSE(five.has_interval);
  EXPECT_DOUBLE_EQ(five.median, 3);
  EXPECT_TRUE(median_interval({1, 2, 3, 4, 5, 6}).has_interval);  // 2/64 <= 0.05
  EXPECT_DOUBLE_EQ(median_interval({}).p_value, 1);
}

// `steps` steps of `ranks` ranks, every phase 10 ms but rank `slow`'s forward
// `extra` ms longer; step s of rank r gets +-jitter in backward, alternating
// so that no rank is ahead in most steps.
std::vector<RankSteps> job(int ranks, int steps, int slow, double extra, double jitter = 0) {
  std::vector<RankSteps> out;
  for (int r = 0; r < ranks; ++r) {
    RankSteps rs;
    rs.rank = r;
    for (int s = 0; s < steps; ++s) {
      rs.phase_ms[0].push_back(1);
      rs.phase_ms[1].push_back(10 + (r == slow ? extra : 0));
      rs.phase_ms[2].push_back(10 + ((s + r) % 2 ? jitter : -jitter));
      rs.phase_ms[3].push_back(2);
      rs.wait_ms.push_back(r == slow ? 0.5 : 0.5 + extra);
    }
    out.push_back(rs);
  }
  return out;
}

TEST(SlowRank, NamesTheRankTheOthersWaitForWithItsPhase) {
  const SlowRank v = judge_slow_rank(job(3, 10, 2, 4.6));  // compute 23 against 27.6: 1.2x
  EXPECT_TRUE(v.resolved);
  EXPECT_EQ(v.rank, 2);
  EXPECT_EQ(v.ranks, 3);
  EXPECT_EQ(v.steps, 10);
  EXPECT_NEAR(v.ratio, 1.2, 1e-12);
  EXPECT_NEAR(v.lo, 1.2, 1e-12);  // every step the same: the interval is the point
  EXPECT_NEAR(v.extra_ms, 4.6, 1e-9);  // (1.2 - 1) x the others' 23 ms
  EXPECT_EQ(v.phase, "forward");
  EXPECT_NEAR(v.phase_extra_ms.at("forward"), 4.6, 1e-12);
  EXPECT_NEAR(v.phase_extra_ms.at("backward"), 0, 1e-12);
  EXPECT_NEAR(v.others_wait_ms, 5.1, 1e-12);
  EXPECT_NEAR(v.rank_wait_ms, 0.5, 1e-12);
  EXPECT_NEAR(v.p_value, 3 * 1.0 / 1024, 1e-12);  // the one-sided sign test's, Holm over three ranks
  EXPECT_EQ(slow_rank_text(v),
            "rank 2 slowest, +4.60 ms [4.60, 4.60] per step (forward); the others wait 5.10 ms in communication");
}

TEST(SlowRank, NamesNoRankBelowTheThresholdOrWithoutAnInterval) {
  // 3 % slower in every step: significant, but under kSlowRankMinPct.
  const SlowRank small = judge_slow_rank(job(2, 10, 1, 0.69));
  EXPECT_FALSE(small.resolved);
  EXPECT_EQ(small.rank, 1);
  EXPECT_NEAR(small.ratio, 1.03, 1e-12);
  // 20 % slower, but five steps give no 95 % interval.
  const SlowRank few = judge_slow_rank(job(2, 5, 1, 4.6));
  EXPECT_FALSE(few.resolved);
  EXPECT_EQ(slow_rank_text(few), "no rank resolved slower (the slowest, rank 1: +4.60 ms per step; 5 steps: too few "
                                 "for an interval, 6 or more)");
  // Alike ranks whose steps alternate: ahead in half of them.
  const SlowRank quiet = judge_slow_rank(job(2, 10, -1, 0, 3));
  EXPECT_FALSE(quiet.resolved);
  EXPECT_GT(quiet.p_value, 0.5);
}

TEST(SlowRank, AFewDisturbedStepsDoNotNameARank) {
  // Rank 0 three times slower in 3 steps of 20: a mean and its t interval
  // would move; the median and the signs do not.
  auto ranks = job(2, 20, -1, 0, 0.2);
  for (int s : {4, 5, 6}) ranks[0].phase_ms[2][size_t(s)] = 60;
  const SlowRank v = judge_slow_rank(ranks);
  EXPECT_FALSE(v.resolved);
  EXPECT_LT(v.ratio, 1.05);
}

TEST(SlowRank, RefusesFewerThanTwoRanksOrSteps) {
  EXPECT_THROW(judge_slow_rank(job(1, 10, 0, 1)), std::invalid_argument);
  EXPECT_THROW(judge_slow_rank(job(2, 1, 0, 1)), std::invalid_argument);
}

}  // namespace
}  // namespace ladder
