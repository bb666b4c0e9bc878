// tests/reports/test_roofline_section.cpp: the run's roofline as structs
// (reports/model/report/roofline_section.h): every roofline.json and every
// summary's roofline section recorded in reports/results/ reads strictly and
// writes back the same JSON, and what the section cannot hold is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/common/config_error.h"
#include "reports/model/report/roofline_section.h"

namespace ladder {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_file(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// The recorded files under reports/results/ whose name ends in `suffix`.
std::vector<fs::path> recorded(const std::string& suffix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(LADDER_SOURCE_DIR) / "reports" / "results")) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(e.path());
  }
  return out;
}

TEST(RooflineSection, EveryRecordedRooflineFileReadsAndWritesBackTheSame) {
  int read = 0, with_shapes = 0, with_memory = 0;
  for (const fs::path& p : recorded("roofline.json")) {
    const nlohmann::json j = read_file(p);
    const RooflineFile r = roofline_file_from(j, p.string());
    EXPECT_EQ(fields::to_json(r), j) << p;
    ++read;
    with_memory += r.memory.has_value();
    const PrecisionRoofline* fp32 = r.precision("fp32");
    ASSERT_NE(fp32, nullptr) << p;
    with_shapes += !fp32->best.shape_list().empty();
  }
  // Both kinds are on record: square-only probes without a bandwidth (2026-11-25) and the shapes and memory since.
  EXPECT_GE(read, 10);
  EXPECT_GT(with_shapes, 0);
  EXPECT_GT(with_memory, 0);
  EXPECT_LT(with_memory, read);
}

TEST(RooflineSection, EveryRecordedSummarysSectionReadsAndWritesBackTheSame) {
  int ok = 0;
  for (const fs::path& p : recorded("summary.json")) {
    const nlohmann::json summary = read_file(p);
    if (!summary.contains("roofline")) continue;  // a summary of a build before the run's roofline
    const nlohmann::json& j = summary["roofline"];
    const auto s = fields::from_json<SummaryRoofline>(j, p.string() + ": roofline");
    EXPECT_EQ(fields::to_json(s), j) << p;
    ok += s.ok();
  }
  EXPECT_GE(ok, 40);
}

TEST(RooflineSection, AFailedProbeHoldsNoMeasurementAndAnOkOneAllOfIt) {
  const nlohmann::json failed = {{"status", "failed"}, {"reason", "the roofline probe exited 1"}};
  const auto f = fields::from_json<SummaryRoofline>(failed, "summary.json: roofline");
  EXPECT_FALSE(f.ok());
  EXPECT_FALSE(f.measured.has_value());
  EXPECT_EQ(fields::to_json(f), failed);

  SummaryRoofline s{"ok", {}, "roofline.json", {}};
  RooflineFile file;
  file.schema_version = 3;
  file.device = "Test CPU";
  file.precisions["fp32"].best.tflops = 0.25;
  s.measured = file;
  nlohmann::json j = fields::to_json(s);
  EXPECT_EQ(j["device"], "Test CPU") << "the file's fields sit beside the status";
  EXPECT_EQ(j["precisions"]["fp32"]["matmul_tflops"], 0.25);
  EXPECT_FALSE(j.contains("measured")) << "an inline struct's name is not written";
  EXPECT_TRUE(fields::from_json<SummaryRoofline>(j, "roofline").ok());

  j.erase("device");  // half a file: refused, naming the field
  try {
    fields::from_json<SummaryRoofline>(j, "summary.json: roofline");
    FAIL() << "read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("summary.json: roofline.device: is missing"), std::string::npos) << e.what();
  }
  j = fields::to_json(s);
  j["precisions"]["fp32"]["gflops"] = 250;  // a field no build wrote
  EXPECT_THROW(fields::from_json<SummaryRoofline>(j, "roofline"), ConfigError);
}

TEST(RooflineSection, TheSummarySchemaRequiresTheFileOnlyWhenOk) {
  const nlohmann::json schema = fields::schema_of<SummaryRoofline>();
  EXPECT_EQ(schema["required"], nlohmann::json::array({"status"}));
  EXPECT_TRUE(schema["properties"].contains("precisions"));
  EXPECT_EQ(schema["if"]["properties"]["status"]["const"], "ok");
  const nlohmann::json& then = schema["then"]["required"];
  for (const char* key : {"kind", "device", "precisions", "schema_version"})
    EXPECT_NE(std::find(then.begin(), then.end(), key), then.end()) << key;
  EXPECT_EQ(std::find(then.begin(), then.end(), "memory"), then.end()) << "older files have no bandwidth";
}

TEST(RooflineSection, ARooflineFileOfAnotherKindIsRefusedByName) {
  try {
    roofline_file_from({{"kind", "ladder.rung_report"}}, "runs/x/roofline.json");
    FAIL() << "read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("runs/x/roofline.json: field 'kind' is \"ladder.rung_report\", expected "
                                         "\"ladder.roofline\""),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ladder
