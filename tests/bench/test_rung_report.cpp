// tests/bench/test_rung_report.cpp: the one report builder (bench/measure/report/rung_report.h)
// on a CUDA process's figures, without a GPU: the memory section's CUDA and
// CUDA-graph branches (which peaks are null, which basis the peak takes), and
// the report reads back into the struct it was written from.
#include <gtest/gtest.h>

#include <string>

#include "bench/measure/config_options.h"
#include "bench/measure/report/rung_report.h"
#include "reports/model/report/rung_report.h"

namespace ladder {
namespace {

using nlohmann::json;

const std::string kRoofline =
    std::string(LADDER_SOURCE_DIR) + "/reports/results/2026-11-27-h100-80gb-hbm3/ladder/roofline.json";

// A process on an H100 as its harness would hand it over: three steps, the
// caching allocator's peaks, the run's recorded roofline (so no probe runs).
json cuda_report(bool graph) {
  MeasuredRun m;
  m.cfg = config_for("tiny", Overrides{}, "cuda");
  m.cfg.rung = "fp32";
  m.run_id = "20261129T000000Z-1";
  m.started_at = m.finished_at = "2026-11-29T00:00:00.000Z";
  m.device = torch::Device(torch::kCUDA, 0);
  m.device_name = "NVIDIA H100 80GB HBM3";
  m.environment.device.kind = "cuda";  // as the CUDA adapter describes it (bench/measure/device/device.h)
  m.environment.device.name = m.device_name;
  m.environment.device.count = 1;
  m.environment.device.memory_bytes = 1000;
  m.switches = {};
  m.data.kind = "synthetic";
  m.n_params = 100000;
  m.n_params_without_wpe = 90000;
  m.graph = graph;
  m.memory_monitor = "test";
  m.roofline = read_roofline_in_use(kRoofline);
  HarnessResult r;
  r.timing_mode = "end_to_end";
  r.timer_method = "cuda_events";
  r.warmup_stopped = "fixed";
  for (int64_t i = 0; i < 3; ++i) {
    StepRecord s;
    s.step = i;
    s.dt_ms = 10.0 + double(i);
    s.tokens = 256;
    s.tokens_per_s = 256 / (s.dt_ms * 1e-3);
    s.loss = 5.0;
    s.grad_norm = 1.0;
    r.steps.push_back(s);
  }
  r.measured_wall_ms = 40;
  r.memory.peak_allocated_bytes = 100;
  r.memory.peak_reserved_bytes = 400;
  r.memory.peak_active_bytes = 300;
  r.memory.device_total_bytes = 1000;
  r.memory.peak_rss_bytes = 50;
  return build_rung_report(m, r);
}

TEST(RungReport, CudaMemoryPeaksComeFromTheCachingAllocator) {
  const json j = cuda_report(false);
  const json& x = j["memory"]["measured"];
  EXPECT_EQ(x["peak_allocated_bytes"], 100);
  EXPECT_EQ(x["peak_reserved_bytes"], 400);
  EXPECT_EQ(x["peak_active_bytes"], 300);
  EXPECT_EQ(x["peak_bytes"], 400);  // reserved on CUDA, not the host's RSS
  EXPECT_EQ(x["peak_kind"], "cuda_peak_reserved");
  EXPECT_DOUBLE_EQ(x["peak_reserved_pct_of_device"].get<double>(), 40.0);
  EXPECT_DOUBLE_EQ(x["peak_active_pct_of_device"].get<double>(), 30.0);
  EXPECT_EQ(x["allocated_active_valid"], true);
  EXPECT_EQ(x["allocated_active_note"], "");
  EXPECT_TRUE(j["mfu"]["datasheet"]["mfu_pct"].is_number());  // the H100's datasheet entry
  EXPECT_EQ(j["mfu"]["measured_roofline"]["source"]["file"], kRoofline);
  EXPECT_EQ(fields::to_json(fields::from_json<RungReport>(j, "report.json")), j);
}

// A CUDA-graph replay allocates nothing: allocated and active peaks leave out
// the graph's pool, so they are null, and reserved (which holds it) stays.
TEST(RungReport, CudaGraphLeavesThePoolBlindPeaksNull) {
  const json j = cuda_report(true);
  const json& x = j["memory"]["measured"];
  EXPECT_TRUE(x["peak_allocated_bytes"].is_null());
  EXPECT_TRUE(x["peak_active_bytes"].is_null());
  EXPECT_TRUE(x["peak_active_pct_of_device"].is_null());
  EXPECT_EQ(x["peak_reserved_bytes"], 400);
  EXPECT_EQ(x["allocated_active_valid"], false);
  EXPECT_EQ(x["allocated_active_note"].get<std::string>().rfind("null: a CUDA-graph replay", 0), 0u);
  EXPECT_EQ(fields::to_json(fields::from_json<RungReport>(j, "report.json")), j);
}

}  // namespace
}  // namespace ladder
