// tests/bench/test_matrix.cpp: the matrix resolves presets x shapes x rungs into
// cells (fp32 first, parity references sized to the device) and rejects bad
// configurations and matrix files.
#include <fstream>

#include <gtest/gtest.h>

#include "bench/run/matrix.h"
#include "variants/config/config.h"
#include "variants/config/rungs.h"

namespace ladder {
namespace {

TEST(Matrix, CellsPutFp32FirstAndNameShapesWhenThereAreSeveral) {
  MatrixSpec spec;
  spec.device = "cpu";
  spec.presets = {"tiny"};
  spec.rungs = {"flash"};
  auto cells = build_cells(spec);
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].id, "fp32");
  EXPECT_EQ(cells[1].id, "flash");
  EXPECT_EQ(cells[1].parity_ref, "fp32");
  spec.batches = {2, 4};
  cells = build_cells(spec);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].id, "tiny-b2-t64/fp32");
  EXPECT_EQ(cells[3].id, "tiny-b4-t64/flash");
  EXPECT_EQ(cells[3].cfg.batch, 4);
}

TEST(Matrix, GradAccumGetsASingleStepReferenceWithTheSameTotalBatch) {
  MatrixSpec spec;
  spec.device = "cpu";
  spec.presets = {"tiny"};  // B4 T64, total 1024 tokens: 4 micro-steps
  spec.rungs = {"grad-accum"};
  auto cells = build_cells(spec);
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[1].id, "grad-accum.parity-single");
  EXPECT_EQ(cells[1].cfg.batch, 16);
  EXPECT_FALSE(cells[1].cfg.sw.on(switches::grad_accum));
  EXPECT_EQ(cells[2].cfg.micro_steps(), 4);
  EXPECT_EQ(cells[2].parity_ref, "grad-accum.parity-single");
  EXPECT_EQ(cells[2].parity_subject, "grad-accum");
}

TEST(Matrix, AccumulationParityIsSizedToTheDeviceMemory) {
  MatrixSpec spec;
  spec.device = "cpu";
  spec.presets = {"tiny"};  // B4 T64, 4 micro-steps
  spec.rungs = {"grad-accum"};
  RunConfig probe = config_for("tiny", Overrides{}, "cpu");
  probe.sw = parse_rung("grad-accum").sw;  // the single step: the rung without accumulation
  probe.sw.set(switches::grad_accum, false);
  auto memory_for_single_batch = [&](int64_t batch) {
    probe.batch = batch;
    return int64_t(double(step_memory_estimate_bytes(probe)) / kParityMemoryFraction) + 1;
  };
  // Room for one step of 2 micro-batches but not 3: the reference replays 2.
  spec.device_memory_bytes = memory_for_single_batch(8);
  auto cells = build_cells(spec);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].id, "fp32");
  EXPECT_EQ(cells[1].id, "grad-accum.parity-accum");
  EXPECT_EQ(cells[1].cfg.batch, 4);
  EXPECT_EQ(cells[1].cfg.micro_steps(), 2);
  EXPECT_EQ(cells[2].id, "grad-accum.parity-single");
  EXPECT_EQ(cells[2].cfg.batch, 8);
  EXPECT_EQ(cells[3].parity_subject, "grad-accum.parity-accum");
  EXPECT_EQ(cells[3].parity_ref, "grad-accum.parity-single");
  EXPECT_EQ(cells[3].cfg.micro_steps(), 4);  // the measured rung is unchanged
  // Room for a step of 2 rows only: 2 micro-steps of a halved, then quartered micro-batch.
  spec.device_memory_bytes = memory_for_single_batch(2);
  cells = build_cells(spec);
  EXPECT_EQ(cells[1].cfg.batch, 1);
  EXPECT_EQ(cells[1].cfg.micro_steps(), 2);
  EXPECT_EQ(cells[2].cfg.batch, 2);
  // Unknown memory: the full 4 micro-steps, as before.
  spec.device_memory_bytes = 0;
  EXPECT_EQ(build_cells(spec)[1].cfg.batch, 16);
}

TEST(Matrix, DdpOnOneDeviceIsNotRunnableUnlessAskedFor) {
  MatrixSpec spec;
  spec.device = "cpu";
  spec.presets = {"tiny"};
  spec.nproc_per_node = 1;  // one GPU: the default rank count there
  auto ddp_cell = [&] {
    for (const auto& c : build_cells(spec))
      if (c.id == "ddp") return c;
    ADD_FAILURE() << "no ddp cell";
    return Cell{};
  };
  const Cell skipped = ddp_cell();
  EXPECT_FALSE(skipped.runnable);
  EXPECT_NE(skipped.not_runnable_reason.find("single rank"), std::string::npos) << skipped.not_runnable_reason;
  EXPECT_NE(skipped.not_runnable_reason.find("--rungs ddp"), std::string::npos) << skipped.not_runnable_reason;
  spec.ddp_requested = true;
  EXPECT_TRUE(ddp_cell().runnable);
  spec.ddp_requested = false;
  spec.nproc_per_node = 2;
  EXPECT_TRUE(ddp_cell().runnable);
}

TEST(Matrix, TotalBatchNotDivisibleByMicroBatchIsRejected) {
  MatrixSpec spec;
  spec.device = "cpu";
  spec.presets = {"tiny"};
  spec.rungs = {"grad-accum"};
  spec.overrides.fields.set("total_batch", int64_t(1000));  // not a multiple of 4*64
  try {
    build_cells(spec);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--total-batch: 1000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  }
}

TEST(Matrix, MatrixFileRejectsUnknownKeysAndBadJson) {
  const std::string path = ::testing::TempDir() + "ladder_matrix_test.json";
  MatrixSpec spec;
  std::ofstream(path) << R"({"presets": ["tiny"], "rungz": ["fp32"]})";
  try {
    read_matrix_file(path, spec);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'rungz'"), std::string::npos) << e.what();
  }
  std::ofstream(path) << R"({"presets": ["tiny"], )";
  EXPECT_THROW(read_matrix_file(path, spec), ConfigError);
  std::ofstream(path) << R"({"presets": "tiny", "batch": [2, 4], "rungs": ["fp32", "flash"], "steps": 3})";
  read_matrix_file(path, spec);
  EXPECT_EQ(spec.presets, std::vector<std::string>{"tiny"});
  EXPECT_EQ(spec.batches, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(spec.overrides.fields.get<int64_t>("steps").value_or(-1), 3);
  std::ofstream(path) << R"({"batch": "four"})";
  EXPECT_THROW(read_matrix_file(path, spec), ConfigError);
}

}  // namespace
}  // namespace ladder
