// tests/bench/test_environment.cpp: what a device says of itself
// (bench/measure/device/device.h describe_device) and the environment built
// from it (environment.h), as the report writes and reads them back.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/measure/device/device.h"
#include "bench/measure/device/environment.h"
#include "profiler/common/config_error.h"

namespace ladder {
namespace {

TEST(Environment, ACpuDescribesItselfAndReadsBackStrictly) {
  const DeviceDescription d = describe_device(torch::Device(torch::kCPU));
  EXPECT_EQ(d.kind, "cpu");
  EXPECT_FALSE(d.name.empty());
  EXPECT_EQ(d.count, 1);
  EXPECT_GT(d.memory_bytes, 0);
  ASSERT_TRUE(d.logical_cores.has_value());
  EXPECT_GT(*d.logical_cores, 0);
  EXPECT_FALSE(d.index.has_value() || d.compute_capability.has_value() || d.cublaslt_version.has_value())
      << "a CPU names no CUDA property";
  const nlohmann::json j = fields::to_json(d);
  EXPECT_FALSE(j.contains("index")) << "absent, not null";
  EXPECT_EQ(fields::to_json(fields::from_json<DeviceDescription>(j, "environment.device")), j);
  nlohmann::json odd = j;
  odd["kind"] = "tpu";
  EXPECT_THROW(fields::from_json<DeviceDescription>(odd, "environment.device"), ConfigError);
}

TEST(Environment, TheSectionTakesTheCpusFactsFromItsDescription) {
  const EnvironmentSection e = describe_environment(torch::Device(torch::kCPU));
  const DeviceDescription cpu = describe_device(torch::Device(torch::kCPU));
  EXPECT_EQ(e.cpu_model, cpu.name);
  EXPECT_EQ(e.cpu_logical_cores, *cpu.logical_cores);
  EXPECT_EQ(e.device.name, cpu.name);
  EXPECT_FALSE(e.versions.cuda_runtime.has_value());  // null on a CPU
  ASSERT_TRUE(e.versions.cublaslt.has_value());       // written, as null
  EXPECT_FALSE(e.versions.cublaslt->has_value());
  const nlohmann::json j = fields::to_json(e);
  EXPECT_EQ(fields::to_json(fields::from_json<EnvironmentSection>(j, "environment")), j);
}

}  // namespace
}  // namespace ladder
