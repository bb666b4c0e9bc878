// tests/bench/test_speed_of_light.cpp: the speed-of-light table's arithmetic
// (bench/measure/roofline/speed_of_light.h) on hand-made work and ceilings: each
// site's floor is the larger of FLOPs over the matmul ceiling and bytes over
// the bandwidth of its working set (or the link's), a band's floor the sum of
// its sites', efficiency floor / measured, headroom measured - floor, the
// step's floor the sum of the bands', the largest headroom among the bands
// that have work; a floor above its measurement is flagged.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/measure/roofline/speed_of_light.h"
#include "profiler/common/config_error.h"

namespace ladder {
namespace {

using profiler::Category;

// Measured ms per step by band; the bands not named measured nothing.
profiler::PerCategory<double> measured_ms(std::initializer_list<std::pair<Category, double>> ms) {
  profiler::PerCategory<double> out;
  for (const auto& [band, v] : ms) out[band] = v;
  return out;
}

Ceilings ceilings() {
  Ceilings c;
  c.matmul_tflops = 100;  // 1e14 FLOP/s
  MemoryBandwidth m;
  BandwidthAtSize small, dram;
  small.working_set_bytes = 1 << 20;  // 1 MiB from cache at 400 GB/s (triad's the better)
  small.copy_gbps = 300;
  small.triad_gbps = 400;
  dram.working_set_bytes = 1 << 30;   // 1 GiB and above: DRAM at 100 GB/s
  dram.copy_gbps = 100;
  dram.triad_gbps = 90;
  m.sizes = {small, dram};
  c.memory = m;
  c.memory_gbps = 100;
  c.link_gbps = 10;
  return c;
}

WorkList work() {
  WorkList w;
  // 1e12 FLOP and 2e9 bytes, 3 times: compute 10 ms, memory (at DRAM's 100 GB/s) 20 ms -> memory binds, 60 ms.
  w.add({"gemm/a", Category::kGemm, WorkBound::kMatmul, 3, 1e12, 1.5e9, 0.5e9});
  // 2e13 FLOP, 4e6 bytes (at 1 MiB's 400 GB/s: 0.01 ms): compute 200 ms binds.
  w.add({"gemm/b", Category::kGemm, WorkBound::kMatmul, 1, 2e13, 2e6, 2e6});
  // 2e6 bytes: between the two sizes, so the 1 MiB one's 400 GB/s applies: 0.005 ms, twice.
  w.memory("ln/x", Category::kElementwiseNorm, 2, 1e6, 1e6);
  // 1e9 bytes over the 10 GB/s link: 100 ms.
  w.add({"ddp/all-reduce", Category::kCommunication, WorkBound::kLink, 1, 0, 0.5e9, 0.5e9});
  return w;
}

TEST(SpeedOfLight, FloorsBandsAndHeadroom) {
  const auto measured = measured_ms({{Category::kGemm, 300.0},
                                     {Category::kElementwiseNorm, 1.0},
                                     {Category::kCommunication, 150.0},
                                     {Category::kIdleOther, 5.0},
                                     {Category::kAttention, 0.0}});
  const SpeedOfLight s = speed_of_light(work(), ceilings(), measured, 500.0);
  ASSERT_EQ(s.bands.size(), 4u);  // gemm, elementwise/norm, communication, idle/other (attention has neither)
  const SolBand& gemm = s.bands[0];
  EXPECT_EQ(gemm.band, "gemm");
  ASSERT_EQ(gemm.sites.size(), 2u);
  EXPECT_EQ(gemm.sites[0].name, "gemm/b");  // the larger floor first
  EXPECT_DOUBLE_EQ(gemm.sites[0].floor_ms, 200.0);
  EXPECT_EQ(gemm.sites[0].binds, "compute");
  EXPECT_DOUBLE_EQ(gemm.sites[1].floor_ms, 60.0);
  EXPECT_EQ(gemm.sites[1].binds, "memory");
  EXPECT_DOUBLE_EQ(gemm.floor_ms, 260.0);
  EXPECT_EQ(gemm.binds, "compute");
  EXPECT_DOUBLE_EQ(gemm.headroom_ms(), 40.0);
  EXPECT_NEAR(gemm.efficiency_pct(), 100.0 * 260 / 300, 1e-12);
  const SolBand& ln = s.bands[1];
  EXPECT_NEAR(ln.floor_ms, 2 * 2e6 / 400e9 * 1e3, 1e-15);
  EXPECT_EQ(ln.binds, "memory");
  const SolBand& comm = s.bands[2];
  EXPECT_DOUBLE_EQ(comm.floor_ms, 100.0);
  EXPECT_EQ(comm.binds, "link");
  EXPECT_EQ(s.bands[3].band, "idle_other");
  EXPECT_DOUBLE_EQ(s.bands[3].floor_ms, 0.0);
  EXPECT_DOUBLE_EQ(s.floor_ms, 260.0 + ln.floor_ms + 100.0);
  EXPECT_DOUBLE_EQ(s.dt_over_floor(), 500.0 / s.floor_ms);
  ASSERT_NE(s.largest_headroom(), nullptr);
  EXPECT_EQ(s.largest_headroom()->band, "communication");  // 50 ms, against gemm's 40; idle's 5 never counts
  for (const auto& b : s.bands) EXPECT_FALSE(b.floor_above_measured()) << b.band;
  EXPECT_TRUE(s.notes.empty());
}

TEST(SpeedOfLight, AFloorAboveItsMeasurementIsFlagged) {
  const SpeedOfLight s = speed_of_light(work(), ceilings(),
                                        measured_ms({{Category::kGemm, 100.0},
                                                     {Category::kElementwiseNorm, 1.0},
                                                     {Category::kCommunication, 150.0}}),
                                        500.0);
  EXPECT_TRUE(s.bands[0].floor_above_measured());
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("gemm: floor 260.000 ms above the measured 100.000 ms"), std::string::npos) << s.notes[0];
  const nlohmann::json j = fields::to_json(sol_section(s));
  EXPECT_EQ(j["bands"][0]["floor_above_measured"], true);
}

// A process whose own sweep ran faster than the run's probe (this VM's memory
// has two speeds per process) is held to its own speed: no working set's
// bandwidth below it, so the DRAM-bound site's floor falls; a slower sweep
// changes nothing.
TEST(SpeedOfLight, AProcessIsHeldToItsOwnFasterSweep) {
  const auto measured =
      measured_ms({{Category::kGemm, 300.0}, {Category::kElementwiseNorm, 1.0}, {Category::kCommunication, 150.0}});
  Ceilings fast = ceilings();
  fast.process_sweep_gbps = 200;  // above DRAM's 100
  fast.process_sweep_bytes = 64 << 20;
  EXPECT_DOUBLE_EQ(fast.memory_gbps_for(2e9), 200.0);
  EXPECT_DOUBLE_EQ(fast.memory_gbps_for(2e6), 400.0);  // a cache-sized working set keeps its faster rate
  const SpeedOfLight s = speed_of_light(work(), fast, measured, 500.0);
  EXPECT_DOUBLE_EQ(s.bands[0].sites[1].floor_ms, 30.0);  // gemm/a: 2e9 bytes at 200 GB/s, 3 times
  Ceilings slow = ceilings();
  slow.process_sweep_gbps = 50;
  slow.process_sweep_bytes = 64 << 20;
  EXPECT_DOUBLE_EQ(speed_of_light(work(), slow, measured, 500.0).bands[0].sites[1].floor_ms, 60.0);
  const nlohmann::json j = fields::to_json(sol_section(s));
  EXPECT_DOUBLE_EQ(j["ceilings"]["process_sweep_gbps"].get<double>(), 200.0);
}

// Without a measured ladder one figure applies to every size; without a link or a matmul ceiling the floor
// counts what is known and says so.
TEST(SpeedOfLight, UnknownCeilingsLeaveAPartialFloor) {
  Ceilings c = ceilings();
  c.memory.reset();
  c.link_gbps = 0;
  const SpeedOfLight s =
      speed_of_light(work(), c,
                     measured_ms({{Category::kGemm, 300.0}, {Category::kElementwiseNorm, 1.0},
                                  {Category::kCommunication, 150.0}}),
                     500.0);
  EXPECT_NEAR(s.bands[1].floor_ms, 2 * 2e6 / 100e9 * 1e3, 1e-15);  // 100 GB/s at every size now
  const SolBand& comm = s.bands[2];
  EXPECT_DOUBLE_EQ(comm.floor_ms, 0.0);
  EXPECT_TRUE(comm.partial);
  EXPECT_EQ(comm.sites[0].binds, "unknown");
  const nlohmann::json j = fields::to_json(sol_section(s));
  EXPECT_TRUE(j["ceilings"]["link_gbps"].is_null());
  EXPECT_FALSE(j["ceilings"]["memory_measured"].get<bool>());
  EXPECT_EQ(j["largest_headroom"]["band"], "gemm");
}

// The report's section is the table or why there is none, read back strictly either way.
TEST(SpeedOfLight, TheSectionIsTheTableOrWhyNot) {
  const SpeedOfLight s = speed_of_light(
      work(), ceilings(), measured_ms({{Category::kGemm, 300.0}, {Category::kCommunication, 150.0}}), 500.0);
  SolSection with;
  with.table = sol_section(s);
  const nlohmann::json j = fields::to_json(with);
  EXPECT_FALSE(j.contains("unavailable"));
  EXPECT_TRUE(j.contains("bands") && j.contains("ceilings")) << "the table's fields sit in the section itself";
  const auto back = fields::from_json<SolSection>(j, "report.json: speed_of_light");
  ASSERT_NE(back.measured(), nullptr);
  EXPECT_EQ(fields::to_json(back), j);

  const nlohmann::json why = {{"unavailable", "no valid op_breakdown"}};
  const auto none = fields::from_json<SolSection>(why, "report.json: speed_of_light");
  EXPECT_EQ(none.measured(), nullptr);
  EXPECT_EQ(fields::to_json(none), why);

  nlohmann::json half = j;
  half.erase("bands");
  EXPECT_THROW(fields::from_json<SolSection>(half, "report.json: speed_of_light"), ConfigError);
  const nlohmann::json schema = fields::schema_of<SolSection>();
  EXPECT_EQ(schema["then"]["maxProperties"], 1) << "unavailable stands alone";
  EXPECT_EQ(schema["else"]["required"], fields::schema_of<SpeedOfLightSection>()["required"]);
}

}  // namespace
}  // namespace ladder
