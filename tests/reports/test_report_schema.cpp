// tests/reports/test_report_schema.cpp: reports/rung_report.schema.json is what
// `ladder schema` generates from the RungReport struct and the step metrics
// (bench/measure/report/report_schema.h), and a report read back
// into the struct writes the same JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "bench/measure/report/report_schema.h"
#include "bench/measure/harness/step_metrics.h"
#include "reports/model/report/config_schema.h"
#include "reports/model/run/ratios.h"
#include "reports/model/report/run_figures.h"
#include "reports/model/report/rung_report.h"
#include "reports/model/run/summary_doc.h"
#include "variants/config_fields.h"

namespace ladder {
namespace {

using nlohmann::json;

const std::filesystem::path kRoot = std::filesystem::path(LADDER_FIXTURES_DIR) / ".." / "..";

// reports/<file> is what the generator gives (never edited by hand).
void expect_generated(const char* file, const json& generated, const char* from, const char* command) {
  std::ifstream f(kRoot / "reports" / file);
  ASSERT_TRUE(f) << "reports/" << file << " is missing";
  EXPECT_TRUE(json::parse(f) == generated)
      << "reports/" << file << " is not what " << from << " give: regenerate it with `" << command << "`";
}

TEST(ReportSchema, CommittedFileIsGenerated) {
  expect_generated("rung_report.schema.json", rung_report_schema(), "the structs and step metrics",
                   "build/ladder schema --out reports/rung_report.schema.json");
}

TEST(ReportSchema, CommittedSummarySchemaIsGenerated) {
  expect_generated("run_summary.schema.json", run_summary_schema(),
                   "reports/model/run/summary_doc.h and the figures' and ratios' declarations",
                   "build/ladder schema --summary --out reports/run_summary.schema.json");
}

// A summary row has a column for each declared run figure, and for each
// ratio kind its value, interval and against (and p where it tests); the
// peer's ratio is an object. Nothing else but the row's own fields.
TEST(ReportSchema, SummaryRowsHaveEachFigureAndRatioDeclared) {
  const json row = run_summary_schema()["$defs"]["row"];
  const json& p = row["properties"];
  for (const RunFigure& f : run_figures()) {
    ASSERT_TRUE(p.contains(f.key)) << f.key;
    EXPECT_EQ(p[f.key]["description"], f.what);
  }
  size_t ratio_columns = 0;
  for (const RatioKind& k : ratio_kinds()) {
    const std::string key = k.key;
    ASSERT_TRUE(p.contains(key)) << key;
    if (k.layout == RatioLayout::kPeerObject) {
      EXPECT_EQ(p[key]["type"], "object");
      ++ratio_columns;
      continue;
    }
    for (const std::string& col : {key + "_interval", key + "_against"}) EXPECT_TRUE(p.contains(col)) << col;
    EXPECT_EQ(p.contains(key + "_p"), k.tests) << key;
    ratio_columns += k.tests ? 4 : 3;
  }
  size_t own = 0;
  auto count = [&](const char*, auto&&...) { ++own; };
  SummaryRowDoc probe;
  SummaryRowDoc::fields(probe, count);
  EXPECT_EQ(p.size(), own + run_figures().size() + ratio_columns);
  EXPECT_EQ(row["additionalProperties"], false);
  // A summary of a run with the compile peer: its rows' x compile columns
  // (which the hand-written schema refused) are declared.
  EXPECT_TRUE(p.contains("speedup_vs_compile_interval"));
}

// Each declared step metric is a column of the schema's steps, typed and
// described by its declaration, required when every report has it.
TEST(ReportSchema, EveryStepMetricIsAColumnAndOnlyThose) {
  const json s = rung_report_schema();
  const json& steps = s["$defs"]["steps"];
  EXPECT_EQ(steps["additionalProperties"], false);
  EXPECT_EQ(steps["properties"].size(), step_metrics().size() + 2);  // + step, phase_ms
  for (const StepMetric& m : step_metrics()) {
    ASSERT_TRUE(steps["properties"].contains(m.key)) << m.key;
    const json& col = steps["properties"][m.key];
    EXPECT_EQ(col["description"], m.what);
    const json& type = col["items"]["type"];
    EXPECT_TRUE(type == (m.integer ? "integer" : "number") || type == json({"number", "null"})) << m.key;
    const bool required = std::find(steps["required"].begin(), steps["required"].end(), m.key) !=
                          steps["required"].end();
    EXPECT_EQ(required, m.present == nullptr) << m.key;
    EXPECT_EQ(s["properties"]["summary"]["properties"].contains(m.key), m.summarised) << m.key;
  }
  EXPECT_EQ(steps["properties"]["dt_ms"]["items"]["exclusiveMinimum"], 0);
}

TEST(ReportSchema, AnOkReportNeedsItsSectionsAFailedOneItsFailure) {
  const json s = rung_report_schema();
  for (const auto& name : ok_report_sections()) {
    EXPECT_TRUE(s["properties"].contains(name)) << name;
    EXPECT_NE(std::find(s["then"]["required"].begin(), s["then"]["required"].end(), name), s["then"]["required"].end());
  }
  EXPECT_EQ(s["else"]["required"], json({"failure"}));
  EXPECT_EQ(s["properties"]["schema_version"]["enum"], json({kSchemaVersion}));
}

// The config's schema is the field table's: each field at its JSON path,
// required unless an older config may lack it (if_absent), its bounds kept.
TEST(ReportSchema, ConfigFollowsTheFieldTable) {
  const json s = config_schema();
  for (const ConfigField& f : config_fields()) {
    const json* node = &s;
    const json* parent = nullptr;
    std::string key;
    for (size_t start = 1; start <= f.json_path.size();) {
      const size_t end = std::min(f.json_path.find('/', start), f.json_path.size());
      key = f.json_path.substr(start, end - start);
      parent = node;
      node = node->contains("items") ? &node->at("items") : &node->at("properties").at(key);
      start = end + 1;
    }
    if (parent->contains("items")) continue;  // betas/0: an array's item
    const json& req = parent->at("required");
    EXPECT_EQ(std::find(req.begin(), req.end(), key) != req.end(), f.if_absent == nullptr) << f.name;
    if (f.bounds.lo) {
      EXPECT_EQ(node->at(f.bounds.lo_open ? "exclusiveMinimum" : "minimum"), *f.bounds.lo) << f.name;
    }
    if (!f.bounds.choices.empty()) {
      EXPECT_EQ(node->at("enum"), json(f.bounds.choices)) << f.name;
    }
  }
  EXPECT_EQ(s["properties"]["train"]["properties"]["betas"]["maxItems"], 2);
  // Any declared switch's flag, unlisted: a new switch leaves the schema as it is.
  EXPECT_EQ(s["properties"]["switches"]["additionalProperties"], json({{"type", "boolean"}}));
}

RungReport failed_report() {
  RungReport r;
  r.schema_version = kSchemaVersion;
  r.kind = "ladder.rung_report";
  r.run_id = "20261129T000000Z-1";
  r.rung = "ddp";
  r.status = "crashed";
  r.started_at = "2026-11-29T00:00:00.000Z";
  r.finished_at = "2026-11-29T00:00:01.000Z";
  r.config.rung = "ddp";
  r.config.world_size = 2;
  Failure f;
  f.reason = "rank 1 was killed";
  f.exit_code = std::optional<int64_t>();  // present, null: a signal ended it
  f.signal = std::optional<std::string>("SIGKILL");
  f.seconds = 1.5;
  f.first_failed_rank = 1;
  f.ranks = std::vector<RankOutcome>{{0, "exited 1", 1.4}, {1, "killed by SIGKILL", 1.5}};
  r.failure = f;
  return r;
}

TEST(ReportSchema, AReportReadBackWritesTheSameJson) {
  const json j = fields::to_json(failed_report());
  EXPECT_TRUE(j["failure"]["exit_code"].is_null());
  EXPECT_EQ(j["failure"]["signal"], "SIGKILL");
  EXPECT_FALSE(j["failure"].contains("message"));
  EXPECT_FALSE(j.contains("timing"));  // absent, not null: a failed report has no steps
  EXPECT_EQ(fields::to_json(fields::from_json<RungReport>(j, "report.json")), j);
  json unknown = j;
  unknown["failure"]["why"] = "?";
  EXPECT_THROW(fields::from_json<RungReport>(unknown, "report.json"), ConfigError);
}

// The config is read by its field table once, with the report: what a
// reader gets is the RunConfig, and a config that does not read names its
// place in the report.
TEST(ReportSchema, TheConfigReadsBackAsTheRunConfig) {
  const json j = fields::to_json(failed_report());
  EXPECT_EQ(j["config"]["rung"], "ddp");
  EXPECT_EQ(j["config"]["model"]["n_layer"], RunConfig{}.model.n_layer);
  const RungReport r = fields::from_json<RungReport>(j, "report.json");
  EXPECT_EQ(r.config.rung, "ddp");
  EXPECT_EQ(r.config.world_size, 2);
  EXPECT_EQ(json(r.config), j["config"]);
  auto error_of = [](const json& bad) -> std::string {
    try {
      fields::from_json<RungReport>(bad, "report.json");
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  json not_object = j;
  not_object["config"] = "tiny";
  EXPECT_NE(error_of(not_object).find("report.json.config: is \"tiny\", expected an object"), std::string::npos)
      << error_of(not_object);
  json no_batch = j;
  no_batch["config"].erase("batch");
  EXPECT_NE(error_of(no_batch).find("report.json.config"), std::string::npos) << error_of(no_batch);
  EXPECT_NE(error_of(no_batch).find("batch"), std::string::npos) << error_of(no_batch);
  json wrong_type = j;
  wrong_type["config"]["model"]["n_layer"] = "twelve";
  EXPECT_NE(error_of(wrong_type).find("report.json.config"), std::string::npos) << error_of(wrong_type);
}

// The summary is read strictly as each metric's Summary and the phases',
// and writes back the same JSON; a statistic missing is named by its path.
TEST(ReportSchema, TheSummaryReadsBackAsEachMetricsStatistics) {
  StepSummary summary;
  summary.metrics = {{"dt_ms", summarize({100, 110, 120})}, {"tokens_per_s", summarize({10, 20})}};
  summary.phase_ms = {{"forward", summarize({30, 31})}};
  RungReport r = failed_report();
  r.summary = summary;
  const json j = fields::to_json(r);
  EXPECT_EQ(j["summary"]["dt_ms"]["median"], 110.0);
  EXPECT_EQ(j["summary"]["phase_ms"]["forward"]["n"], 2);
  const RungReport back = fields::from_json<RungReport>(j, "report.json");
  EXPECT_EQ(back.summary_value("dt_ms"), 110.0);
  EXPECT_EQ(back.summary_value("tokens_per_s", &Summary::max), 20.0);
  EXPECT_EQ(back.summary_value("loss"), std::nullopt);
  EXPECT_EQ(back.summary->phase_ms.at("forward").median, 30.5);
  EXPECT_EQ(fields::to_json(back), j);
  r.summary = StepSummary{};
  r.summary->metrics["dt_ms"] = summarize({1});
  EXPECT_FALSE(fields::to_json(r)["summary"].contains("phase_ms"));  // not timed apart: absent
  json no_cv = j;
  no_cv["summary"]["dt_ms"].erase("cv");
  try {
    fields::from_json<RungReport>(no_cv, "report.json");
    ADD_FAILURE() << "a summary without its cv was read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("report.json.summary.dt_ms.cv: is missing"), std::string::npos) << e.what();
  }
}

// The step columns read back as written: integers stay integers, a NaN is
// null and reads back as NaN, the phases under phase_ms; a column that is
// not numbers, or steps without their numbers, are named by their path.
TEST(ReportSchema, TheStepColumnsReadBackAsWritten) {
  const json steps = json::parse(R"({"step": [3, 4], "dt_ms": [100.5, 101.0], "loss": [10.25, null],
                                     "peak_rss_bytes": [1048576, 2097152], "phase_ms": {"forward": [30.0, 31.5]}})");
  RungReport r = failed_report();
  json j = fields::to_json(r);
  j["steps"] = steps;
  j["warmup_steps"] = json::parse(R"({"step": [], "dt_ms": []})");
  const RungReport back = fields::from_json<RungReport>(j, "report.json");
  EXPECT_EQ(back.steps->step, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(*back.steps->of("dt_ms"), (std::vector<double>{100.5, 101.0}));
  EXPECT_TRUE(std::isnan(back.steps->of("loss")->at(1)));
  EXPECT_TRUE(back.steps->columns.at("peak_rss_bytes").integer);
  EXPECT_FALSE(back.steps->columns.at("dt_ms").integer);
  EXPECT_EQ(back.steps->of("grad_norm"), nullptr);
  EXPECT_EQ(back.steps->phase_ms.at("forward"), (std::vector<double>{30.0, 31.5}));
  EXPECT_EQ(fields::to_json(back).dump(), j.dump());  // byte for byte: 2097152 stays an integer, 101.0 a number
  auto error_of = [&](const char* pointer, const json& value) -> std::string {
    json bad = j;
    bad[json::json_pointer(pointer)] = value;
    try {
      fields::from_json<RungReport>(bad, "report.json");
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "read";
  };
  EXPECT_NE(error_of("/steps/loss/0", "ten").find("report.json.steps.loss[0]: is \"ten\", expected a number or null"),
            std::string::npos)
      << error_of("/steps/loss/0", "ten");
  EXPECT_NE(error_of("/steps/step", json::array({1.5, 2})).find("report.json.steps.step[0]: is 1.5, expected an integer"), std::string::npos)
      << error_of("/steps/step", json::array({1.5, 2}));
  json no_numbers = j;
  no_numbers["steps"].erase("step");
  try {
    fields::from_json<RungReport>(no_numbers, "report.json");
    ADD_FAILURE() << "steps without their numbers were read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("report.json.steps.step: is missing"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ladder
