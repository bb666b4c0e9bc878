// tests/bench/test_speed_probe.cpp: the speed probe (bench/measure/observers/speed_probe.h), the rule
// that names the machine's speed as the cause of a cell's spread
// (reports/stats/machine_speed.h), and what a run's rounds can resolve
// (bench/run/rounds.h resolvable_change).
#include <cmath>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/measure/device/device.h"
#include "bench/run/rounds.h"
#include "bench/measure/observers/speed_probe.h"
#include "reports/stats/machine_speed.h"
#include "reports/model/run/ratios.h"
#include "reports/model/run/summary_json.h"
#include "reports/render/documents/run_document.h"

namespace ladder {
namespace {

using nlohmann::json;

TEST(SpeedProbe, TimesEachRepetitionOfAFixedWorkload) {
  const torch::Device cpu("cpu");
  const int threads = at::get_num_threads();
  at::set_num_threads(1);  // a ddp rank's share: another workload
  EXPECT_EQ(probe_workload(cpu, true).key(), "cpu bf16 gemm 512 + sweep 64 MiB, 9 reps, 1 thread");
  at::set_num_threads(2);
  ProbeWorkload w = probe_workload(cpu, /*bf16=*/false);
  EXPECT_EQ(w.key(), "cpu fp32 gemm 512 + sweep 64 MiB, 9 reps, 2 threads");
  at::set_num_threads(threads);
  w.gemm_n = 64;  // tiny, for the test's time
  w.sweep_bytes = 1 << 20;
  w.reps = 3;
  auto timer = make_step_timer(cpu);
  const ProbeReading before = run_speed_probe(w, cpu, *timer), after = run_speed_probe(w, cpu, *timer);
  ASSERT_EQ(before.gemm_reps_ms.size(), 3u);
  ASSERT_EQ(before.sweep_reps_ms.size(), 3u);
  EXPECT_GT(before.gemm_ms, 0);
  EXPECT_GT(before.sweep_ms, 0);
  const ProbeSection p = probe_section(w, before, after);
  EXPECT_EQ(p.workload, w.key());
  EXPECT_EQ(p.sweep_bytes.value(), 1 << 20);
  EXPECT_DOUBLE_EQ(p.speed_index_per_s.value(), probe_speed_index(before, after));
  EXPECT_DOUBLE_EQ(p.before->gemm_tflops.value(), 2.0 * 64 * 64 * 64 / (before.gemm_ms * 1e9));
  EXPECT_DOUBLE_EQ(p.after->sweep_gb_per_s.value(), 2.0 * (1 << 20) / (after.sweep_ms * 1e6));
}

TEST(SpeedProbe, IndexIsWorkloadsPerSecondOverBothReadings) {
  ProbeReading before, after;
  before.gemm_ms = 10, before.sweep_ms = 6;
  after.gemm_ms = 14, after.sweep_ms = 10;
  EXPECT_DOUBLE_EQ(probe_speed_index(before, after), 1000.0 / (12 + 8));
  ProbeWorkload w = probe_workload(torch::Device("cpu"), false);
  EXPECT_DOUBLE_EQ(probe_section(w, before, after).drift_pct->value(), 100.0 * (24.0 / 16.0 - 1));
}

TEST(SpeedProbe, AFailedReadingIsRecordedNotFatal) {
  auto timer = make_step_timer(torch::Device("cpu"));
  SpeedProbeRun run(torch::Device("cpu"), false, *timer);  // never run: as if both readings failed
  const nlohmann::json j = fields::to_json(run.section());
  EXPECT_TRUE(j.contains("speed_index_per_s") && j["speed_index_per_s"].is_null()) << j.dump();
  EXPECT_TRUE(j.contains("error"));
  EXPECT_FALSE(j.contains("before") || j.contains("drift_pct")) << j.dump();
}

// dt of each process and the probe's speed index (higher: faster).
TEST(MachineSpeed, NamedWhenTheProbesSpreadExplainsDts) {
  // Four processes 12 % apart in dt, the probe slower by about as much in
  // the same processes: the machine's speed.
  const auto s = probe_spread({850, 900, 950, 960}, {100, 95, 89.5, 88}, kQuietCvLimit);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->dt_noisy);
  EXPECT_TRUE(s->explains);
  EXPECT_GT(s->correlation, 0.9);
  EXPECT_NEAR(s->dt_half_range_pct, 100 * (std::sqrt(960.0 / 850) - 1), 1e-9);
  EXPECT_NEAR(s->probe_half_range_pct, 100 * (std::sqrt(100 / 88.0) - 1), 1e-9);
  EXPECT_EQ(s->cause, "the machine's speed varied: probe +-6.6 % across processes (dt +-6.3 %)");
}

TEST(MachineSpeed, NotNamedWhenTheProbeHeldSteadyOrMovedTheOtherWay) {
  // The probe steady (+-0.5 %) while dt spread 12 %: not the machine's speed.
  const auto steady = probe_spread({850, 900, 950, 960}, {100, 99.5, 100.5, 99.8}, kQuietCvLimit);
  ASSERT_TRUE(steady);
  EXPECT_TRUE(steady->dt_noisy);
  EXPECT_FALSE(steady->explains);
  EXPECT_TRUE(steady->cause.empty());
  // As wide, but the fastest steps had the slowest probe.
  const auto against = probe_spread({850, 900, 950, 960}, {88, 89.5, 95, 100}, kQuietCvLimit);
  ASSERT_TRUE(against);
  EXPECT_LT(against->correlation, 0);
  EXPECT_FALSE(against->explains);
  // Half of dt's range is enough; a third is not.
  EXPECT_TRUE(probe_spread({900, 1000}, {100, 100 / std::pow(1000 / 900.0, 0.55)}, kQuietCvLimit)->explains);
  EXPECT_FALSE(probe_spread({900, 1000}, {100, 100 / std::pow(1000 / 900.0, 0.33)}, kQuietCvLimit)->explains);
}

TEST(MachineSpeed, AQuietCellNeedsNoCause) {
  // dt within 2 %: quiet, whatever the probe did.
  const auto s = probe_spread({900, 910, 905}, {100, 80, 90}, kQuietCvLimit);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->dt_noisy);
  EXPECT_FALSE(s->explains);
  // Two processes: the slower one had the slower probe.
  EXPECT_TRUE(probe_spread({900, 1000}, {100, 91}, kQuietCvLimit)->explains);
  EXPECT_FALSE(probe_spread({900, 1000}, {91, 100}, kQuietCvLimit)->explains);
  // Nothing to say about one process, or about a process without a probe.
  EXPECT_FALSE(probe_spread({900}, {100}, kQuietCvLimit));
  EXPECT_FALSE(probe_spread({900, 1000}, {100, 0}, kQuietCvLimit));
  EXPECT_FALSE(probe_spread({900, 1000}, {100}, kQuietCvLimit));
}

// A/B rows of one rung: B/A paired over `rounds` rounds, its interval
// exp(+-h) around 1.
json ab_rows(double h, int rounds) {
  json r = json::array(), tok_s = json::array();
  for (int k = 1; k <= rounds; ++k) {
    r.push_back(k);
    tok_s.push_back(100.0);
  }
  json b = {{"cell", "B/fp32"}, {"side", "B"}, {"rung", "fp32"}, {"status", "ok"}, {"rounds", r},
            {"per_process", {{"tokens_per_s_median", tok_s}}}, {"b_over_a", 1.0},
            {"b_over_a_interval", {std::exp(-h), std::exp(h)}}, {"b_over_a_against", "fp32"}, {"b_over_a_p", 1.0}};
  return json::array({b});
}

TEST(Resolution, TheChangeAPairedRunResolvesAtItsRoundsAndAtMore) {
  RunnerOptions o;
  o.sides = {"A", "B"};
  const double h = 0.06;  // +-6.2 % after 4 rounds: s / sqrt(4) = h / t(0.975, 3)
  const std::vector<SummaryRow> rows = read_summary_rows(ab_rows(h, 4));
  EXPECT_EQ(ratio_df(rows, rows[0], ratio_kind("b_over_a")), 3);
  // Student's t quantiles from scipy.stats.t.ppf: (0.975, 3) 3.182446305, (0.80, 3) 0.978472312,
  // (0.975, 7) 2.364624252, (0.80, 7) 0.896029644.
  const double se = h / 3.182446305;
  const auto now = resolvable_change(rows, o, 4);
  ASSERT_TRUE(now);
  EXPECT_NEAR(now->change_pct, 100 * std::expm1(se * (3.182446305 + 0.978472312)), 1e-6);
  EXPECT_EQ(now->ratios, 1);
  const auto eight = resolvable_change(rows, o, 8);  // df 7, s / sqrt(8)
  ASSERT_TRUE(eight);
  EXPECT_NEAR(eight->change_pct, 100 * std::expm1(se * std::sqrt(4.0 / 8) * (2.364624252 + 0.896029644)), 1e-6);
  EXPECT_LT(eight->change_pct, now->change_pct);
  EXPECT_EQ(resolution_line(*eight, "8.0 min (about 8 rounds)"),
            fmt::format("with this noise, 8.0 min (about 8 rounds) resolves changes of +-{0:.1f} % or more (one "
                        "ratio, {0:.1f}-{0:.1f} %; 95 % confidence, 80 % power)",
                        eight->change_pct));
}

TEST(Resolution, NeverFinerThanTheNoiseThresholdNorWithoutAnInterval) {
  RunnerOptions o;
  o.sides = {"A", "B"};
  EXPECT_DOUBLE_EQ(resolvable_change(read_summary_rows(ab_rows(1e-4, 4)), o, 20)->change_pct, 1.0);
  json rows = ab_rows(0.05, 4);
  rows[0]["b_over_a_interval"] = nullptr;
  EXPECT_FALSE(resolvable_change(read_summary_rows(rows), o, 8));
}

}  // namespace
}  // namespace ladder
