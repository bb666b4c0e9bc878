// tests/bench/test_roofline.cpp: the roofline's two ceilings without timing them:
// which matmul shapes and memory working sets are probed, how rounds and
// later probes fold, how roofline.json's memory object reads back (and how a
// bad one is refused), and which measured size a working set takes its
// bandwidth from.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "bench/measure/roofline/bandwidth.h"
#include "bench/measure/device/device.h"
#include "bench/measure/roofline/roofline.h"
#include "variants/planners/gemm_candidates.h"
#include "variants/config/config.h"

namespace ladder {
namespace {

constexpr int64_t kMiB = int64_t(1) << 20;
const torch::Device kCpu(torch::kCPU);

TEST(Bandwidth, WorkingSetsGoFromCacheToWellPastTheLastLevelCache) {
  // A 32 MiB L3: 256 KiB, x4 ..., up to 8x the LLC = 256 MiB.
  EXPECT_EQ(bandwidth_working_sets(kCpu, 32 * kMiB, 0),
            (std::vector<int64_t>{256 << 10, kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB, 256 * kMiB}));
  // This repository's VM reports a 260 MiB L3: 8x is 2080 MiB, capped at 1 GiB.
  EXPECT_EQ(bandwidth_working_sets(kCpu, 260 * kMiB, 0).back(), 1024 * kMiB);
  // An unknown LLC still goes to 256 MiB; a small machine's memory caps it at a quarter.
  EXPECT_EQ(bandwidth_working_sets(kCpu, 0, 0).back(), 256 * kMiB);
  EXPECT_EQ(bandwidth_working_sets(kCpu, 32 * kMiB, 512 * kMiB).back(), 128 * kMiB);
  // A GPU: from 1 MiB to 4x its L2, at least 1 GiB (H100: 50 MiB of L2).
  const torch::Device gpu(torch::kCUDA, 0);
  EXPECT_EQ(bandwidth_working_sets(gpu, 50 * kMiB, 0),
            (std::vector<int64_t>{kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB, 256 * kMiB, 1024 * kMiB}));
  EXPECT_EQ(bandwidth_working_sets(gpu, 2048 * kMiB, 0).back(), 4096 * kMiB);
}

MemoryBandwidth three_sizes() {
  MemoryBandwidth m;
  m.sizes = {{kMiB, 60.0, 70.0, {}, 100}, {16 * kMiB, 30.0, 28.0, {}, 50}, {256 * kMiB, 8.0, 9.0, 12.0, 3}};
  m.dram_written = m.dram();
  m.llc_bytes = 32 * kMiB;
  m.threads = 2;
  m.probe_ms = 812.5;
  m.method = "copy and triad";
  return m;
}

TEST(Bandwidth, AWorkingSetTakesTheLargestMeasuredSizeNotAboveIt) {
  const MemoryBandwidth m = three_sizes();
  EXPECT_EQ(bandwidth_for_working_set(m, 16 * kMiB).working_set_bytes, 16 * kMiB);
  EXPECT_EQ(bandwidth_for_working_set(m, 100 * kMiB).working_set_bytes, 16 * kMiB);
  EXPECT_EQ(bandwidth_for_working_set(m, 4096 * kMiB).working_set_bytes, 256 * kMiB);
  // Below the smallest measured size: the smallest (never a slower, larger one).
  EXPECT_EQ(bandwidth_for_working_set(m, 4096).working_set_bytes, kMiB);
  EXPECT_DOUBLE_EQ(bandwidth_for_working_set(m, 4096).best_gbps(), 70.0);
  EXPECT_EQ(m.dram().working_set_bytes, 256 * kMiB);
  EXPECT_DOUBLE_EQ(m.dram().best_gbps(), 12.0) << "update, the in-place kernel, is the best there";
}

// `memory` read as the memory object of a roofline.json named `file` (roofline_file_from).
MemoryBandwidth memory_of(const nlohmann::json& memory, const std::string& file) {
  RooflineFile roof;
  roof.device = "Test CPU";
  nlohmann::json j = fields::to_json(roof);
  j["memory"] = memory;
  return *roofline_file_from(j, file).memory;
}

TEST(Bandwidth, JsonReadsBackWhatWasWritten) {
  MemoryBandwidth m = three_sizes();
  m.datasheet = BandwidthEntry{"H100 SXM", 3350.0, "NVIDIA H100 whitepaper table 3 (SXM5)"};
  const nlohmann::json j = fields::to_json(m);
  EXPECT_EQ(j["dram"]["working_set_bytes"], 256 * kMiB);
  EXPECT_EQ(j["datasheet"]["gbps"], 3350.0);
  const MemoryBandwidth back = memory_of(j, "roofline.json");
  ASSERT_EQ(back.sizes.size(), 3u);
  EXPECT_EQ(back.sizes[1].working_set_bytes, 16 * kMiB);
  EXPECT_DOUBLE_EQ(back.sizes[1].triad_gbps, 28.0);
  EXPECT_EQ(back.sizes[2].update_gbps, 12.0);
  EXPECT_FALSE(j["sizes"][1].contains("update_gbps")) << "not measured: left out, read back as absent";
  EXPECT_FALSE(back.sizes[1].update_gbps.has_value());
  EXPECT_EQ(fields::to_json(back), j) << "what is read back writes the same JSON";
  EXPECT_EQ(back.llc_bytes, 32 * kMiB);
  EXPECT_EQ(back.threads, 2);
  ASSERT_TRUE(back.datasheet.has_value());
  EXPECT_EQ(back.datasheet->device, "H100 SXM");
  // Where the LLC or the datasheet is unknown, null (not a guess), read back as such.
  m.llc_bytes.reset();
  m.datasheet.reset();
  const nlohmann::json unknown = fields::to_json(m);
  EXPECT_TRUE(unknown["llc_bytes"].is_null() && unknown["datasheet"].is_null());
  const MemoryBandwidth none = memory_of(unknown, "roofline.json");
  EXPECT_FALSE(none.llc_bytes.has_value());
  EXPECT_FALSE(none.datasheet.has_value());
}

// The ConfigError's message for `j` read as roofline.json's memory object.
std::string error_of(const nlohmann::json& j) {
  try {
    memory_of(j, "runs/x/roofline.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Bandwidth, ABadMemoryObjectNamesTheFileTheFieldAndTheValue) {
  const nlohmann::json good = fields::to_json(three_sizes());
  EXPECT_NE(error_of(nlohmann::json()).find("runs/x/roofline.json.memory: is null, expected an object"),
            std::string::npos)
      << error_of(nlohmann::json());
  nlohmann::json j = good;
  j["sizes"] = nlohmann::json::array();
  EXPECT_NE(error_of(j).find("field 'memory.sizes' is [], expected a non-empty array"), std::string::npos);
  j = good;
  j["sizes"][1]["copy_gbps"] = -3.0;
  EXPECT_NE(error_of(j).find("runs/x/roofline.json.memory.sizes[1].copy_gbps: is -3.0, expected a number > 0"),
            std::string::npos)
      << error_of(j);
  j = good;
  j["sizes"][2].erase("working_set_bytes");
  EXPECT_NE(error_of(j).find("memory.sizes[2].working_set_bytes: is missing"), std::string::npos) << error_of(j);
  j = good;
  j["sizes"][2]["working_set_bytes"] = kMiB;
  EXPECT_NE(error_of(j).find("expected more than the size before it"), std::string::npos) << error_of(j);
}

TEST(Roofline, AMemoryObjectIsReadOnlyFromARooflineOfThisDevice) {
  RooflineFile roof;
  roof.device = "Test CPU";
  roof.memory = three_sizes();
  EXPECT_EQ(run_roofline_memory(roof, "Test CPU", "roofline.json").dram().working_set_bytes, 256 * kMiB);
  EXPECT_THROW(run_roofline_memory(roof, "Other CPU", "roofline.json"), ConfigError);
  roof.memory.reset();  // a roofline.json from before the bandwidth probe
  try {
    run_roofline_memory(roof, "Test CPU", "old/roofline.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("old/roofline.json: field 'memory' is missing"), std::string::npos) << what;
  }
}

// The run's roofline as a process holds it (read once, before the steps):
// the file, or why not, and whether it was there at all (a missing file
// leaves the report the datasheet; one that is there and unreadable, no
// speed of light).
TEST(Roofline, TheRunsRooflineIsReadOnceAndSaysWhyNot) {
  const RooflineInUse none = read_roofline_in_use("");
  EXPECT_FALSE(none.roofline);
  EXPECT_TRUE(none.error.empty());
  EXPECT_FALSE(none.missing);

  const std::string recorded =
      std::string(LADDER_SOURCE_DIR) + "/reports/results/2026-11-27-h100-80gb-hbm3/ladder/roofline.json";
  const RooflineInUse ok = read_roofline_in_use(recorded);
  ASSERT_TRUE(ok.roofline) << ok.error;
  EXPECT_EQ(ok.file, recorded);
  EXPECT_EQ(ok.roofline->device, "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(ok.error.empty());

  const std::string dir = ::testing::TempDir();
  const RooflineInUse missing = read_roofline_in_use(dir + "/no-such-roofline.json");
  EXPECT_FALSE(missing.roofline);
  EXPECT_TRUE(missing.missing);
  EXPECT_FALSE(missing.error.empty());

  const std::string bad = dir + "/not-a-roofline.json";
  std::ofstream(bad) << R"({"kind": "ladder.summary"})";
  const RooflineInUse unreadable = read_roofline_in_use(bad);
  EXPECT_FALSE(unreadable.roofline);
  EXPECT_FALSE(unreadable.missing);
  EXPECT_NE(unreadable.error.find(bad), std::string::npos) << unreadable.error;
}

TEST(Roofline, EveryShapeIsTheBestOfAtLeastTwoCallsAndTheBestShapeIsKept) {
  // Tiny sizes: no timing is asserted, only what was run and recorded.
  const RooflineResult r = probe_matmul(kCpu, Precision::kFP32, 0.01, {32, 64});
  ASSERT_EQ(r.shape_list().size(), 9u);  // three layouts of 32 (k = 32 and 128) and 64 (k = 64 only)
  double best = 0;
  for (const MatmulShape& s : r.shape_list()) {
    EXPECT_TRUE(s.timed()) << *s.skipped;
    // Never a cold first call alone: two calls of ATen's mm, and of oneDNN's matmul where it is built in.
    EXPECT_GE(s.reps.value_or(0), gemm::onednn_available() ? 4 : 2) << s.n << " " << s.k << " " << s.layout;
    const std::string via = s.via.value_or("");
    EXPECT_TRUE(via == "aten" || (via == "onednn" && gemm::onednn_available())) << via;
    EXPECT_TRUE(s.k == s.n || s.k == 4 * s.n) << s.k;
    EXPECT_GT(s.rate(), 0);
    best = std::max(best, s.rate());
  }
  EXPECT_DOUBLE_EQ(r.tflops, best);
  const std::string layout = r.layout.value_or("");
  EXPECT_TRUE(layout == "a@b" || layout == "a@b^T" || layout == "a^T@b") << layout;
  // Written and read back strictly, the same probe.
  const nlohmann::json j = fields::to_json(r);
  EXPECT_EQ(fields::to_json(fields::from_json<RooflineResult>(j, "probe")), j);
  EXPECT_EQ(j["statistic"], kBestCallStatistic);
  EXPECT_TRUE(r.n == 32 || r.n == 64) << r.n;
}

TEST(Roofline, RoundsKeepTheBestRateAndEveryShapesBest) {
  RooflineResult a, b, best;
  a.tflops = 2.0, a.n = 512, a.layout = "a@b", a.reps = 5, a.probe_ms = 100;
  a.shapes = {{{512, 512, "a@b", 2.0, 5, "onednn", {}}, {1024, 1024, "a@b", {}, {}, {}, "too slow"}}};
  b.tflops = 3.0, b.n = 1024, b.layout = "a@b", b.reps = 4, b.probe_ms = 120;
  b.shapes = {{{512, 512, "a@b", 1.5, 2, "aten", {}}, {1024, 1024, "a@b", 3.0, 2, "aten", {}}}};
  keep_best(best, a);
  keep_best(best, b);
  EXPECT_DOUBLE_EQ(best.tflops, 3.0);
  EXPECT_EQ(best.n, 1024);
  EXPECT_EQ(best.reps, 9);
  EXPECT_DOUBLE_EQ(best.probe_ms, 220);
  const std::vector<MatmulShape>& shapes = best.shape_list();
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_DOUBLE_EQ(shapes[0].rate(), 2.0);  // 512's best round, its calls summed
  EXPECT_EQ(shapes[0].via, "onednn");       // and the call that gave it
  EXPECT_EQ(shapes[0].reps, 7);
  EXPECT_TRUE(shapes[1].timed());  // timed in the second round
  EXPECT_DOUBLE_EQ(shapes[1].rate(), 3.0);
  EXPECT_EQ(shapes[1].reps, 2);
  EXPECT_EQ(shapes[1].via, "aten");
}

TEST(Roofline, ALaterProbeOfTheCeilingsKeepsEachPrecisionsBest) {
  // A busy moment held the first probe's fp32 down; the second's bf16 was slower.
  const auto ceilings = [](double fp32, double bf16) {
    MatmulCeilings c;
    for (auto [p, tflops] : {std::pair{Precision::kFP32, fp32}, std::pair{Precision::kBF16, bf16}}) {
      RooflineResult r;
      r.tflops = tflops, r.n = 512, r.layout = "a@b", r.reps = 4;
      c.precisions[precision_name(p)] = {r, {tflops}, {}, {}, {}, {}};
    }
    return c;
  };
  MatmulCeilings best = ceilings(0.038, 0.17);
  keep_best(best, ceilings(0.33, 0.16));
  EXPECT_DOUBLE_EQ(best.of(Precision::kFP32).best.tflops, 0.33);
  EXPECT_DOUBLE_EQ(best.of(Precision::kBF16).best.tflops, 0.17);
  EXPECT_EQ(best.of(Precision::kFP32).tflops_per_round, (std::vector<double>{0.038, 0.33}));
  EXPECT_EQ(best.of(Precision::kBF16).best.reps, 8);
  EXPECT_THROW(best.of(Precision::kTF32), std::logic_error);
}

TEST(Roofline, BestTimeRunsWithinItsBoundsAndKeepsTheFastestCall) {
  auto timer = make_step_timer(kCpu);
  int calls = 0;
  const BestTime t = best_time(*timer, [&] { ++calls; }, 3, 0.0, 10);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(t.reps, 3);
  const BestTime capped = best_time(*timer, [&] { ++calls; }, 2, 3600.0, 5);  // max_reps ends it
  EXPECT_EQ(capped.reps, 5);
  EXPECT_LE(capped.best_ms, capped.wall_ms);
}

}  // namespace
}  // namespace ladder
