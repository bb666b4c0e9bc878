// tests/reports/test_compare.cpp: compare's verdicts on synthetic reports. A
// difference is faster or slower only if it is statistically significant, at
// least the noise threshold, and its interval excludes no change; within
// noise when its interval lies inside the threshold; unresolved otherwise;
// with one process a side, no verdict. Inputs that cannot be judged are
// refused or named: missing reports, an unknown environment.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "reports/model/comparison/comparison.h"
#include "tests/support/complete_report.h"
#include "reports/render/documents/comparison_document.h"
#include "reports/stats/inference.h"
#include "reports/model/report/report_loader.h"
#include "reports/model/report/run_figures.h"
#include "variants/config/config.h"

namespace ladder {
namespace {

using nlohmann::json;

// A complete fp32 report of one process (tests/support/complete_report.h).
RungReport report(double dt_ms, int n_steps = 4, double jitter_ms = 0) {
  return complete_report(dt_ms, n_steps, jitter_ms);
}

// An environment that names its host and device.
EnvironmentSection environment(const std::string& host, const std::string& device) {
  EnvironmentSection e;
  e.host = host;
  e.device.name = device;
  return e;
}

// One input: one process per dt (each process's median), as a --repeat
// run loads; with one dt, a single process.
LoadedRun group(const std::string& label, const std::vector<double>& dts, int n_steps = 4, double jitter_ms = 0) {
  LoadedRun g;
  g.label = label;
  g.path = label;
  for (double dt : dts) {
    LoadedRun r;
    r.label = label;
    r.cells = {"fp32"};
    r.reports = {report(dt, n_steps, jitter_ms)};
    g.repeats.push_back(r);
  }
  g.cells = g.repeats.front().cells;
  g.reports = g.repeats.front().reports;
  if (dts.size() == 1) g.repeats.clear();
  return g;
}

json fp32_verdict(const LoadedRun& a, const LoadedRun& b, double noise_pct = 1.0) {
  CompareOptions o;
  o.noise_threshold_pct = noise_pct;
  const json cmp = compare_runs({a, b}, o);
  return cmp["rungs"][0]["vs_baseline"][1];
}

json fp32_verdict(const std::vector<double>& a, const std::vector<double>& b, double noise_pct = 1.0) {
  return fp32_verdict(group("A", a), group("B", b), noise_pct);
}

TEST(CompareVerdict, SignificantButSmallIsWithinNoise) {
  // Four processes a side, fully separated (p = 0.029), 0.4 % apart: as the
  // H100 A/A pair, 0.2 % apart and called slower before.
  const json v = fp32_verdict({100.0, 100.1, 100.2, 100.3}, {100.4, 100.5, 100.6, 100.7});
  EXPECT_EQ(v["sample_unit"], "processes");
  EXPECT_EQ(v["method"], "welch_t_on_log_dt");
  EXPECT_LT(v["p_value"].get<double>(), 0.05) << v.dump();
  EXPECT_NEAR(v["change_pct"].get<double>(), 0.4, 0.01);
  EXPECT_EQ(v["verdict"], "within noise") << v.dump();
  EXPECT_NE(v["why"].get<std::string>().find("noise threshold 1 %"), std::string::npos) << v["why"];
}

TEST(CompareVerdict, SignificantAndLargeIsSlowerOrFaster) {
  EXPECT_EQ(fp32_verdict({100.0, 100.1, 100.2, 100.3}, {105.0, 105.1, 105.2, 105.3})["verdict"], "slower");
  EXPECT_EQ(fp32_verdict({105.0, 105.1, 105.2, 105.3}, {100.0, 100.1, 100.2, 100.3})["verdict"], "faster");
  // A lower threshold makes the 0.4 % difference a finding.
  EXPECT_EQ(fp32_verdict({100.0, 100.1, 100.2, 100.3}, {100.4, 100.5, 100.6, 100.7}, 0.1)["verdict"], "slower");
}

TEST(CompareVerdict, LargeButNotSignificantIsUnresolved) {
  // 5 % apart in the medians, but the runs overlap: no finding, and no proof
  // of no change either: the interval reaches well past the threshold.
  const json v = fp32_verdict({100.0, 110.0, 95.0, 104.0}, {105.0, 96.0, 112.0, 101.0});
  EXPECT_GE(v["p_value"].get<double>(), 0.05) << v.dump();
  EXPECT_EQ(v["verdict"], "unresolved");
  EXPECT_LT(v["ratio_dt_ms_interval"][0].get<double>(), 0.99) << v.dump();
  EXPECT_GT(v["ratio_dt_ms_interval"][1].get<double>(), 1.01) << v.dump();
  EXPECT_NE(v["why"].get<std::string>().find("more processes"), std::string::npos) << v["why"];
}

TEST(CompareVerdict, ANarrowIntervalAroundOneIsWithinNoise) {
  // Eight processes a side, 0.1 % apart with 0.2 % spread: the interval
  // lies inside +-1 %, so "no change larger than the threshold" is shown.
  const json v = fp32_verdict({100.0, 100.2, 99.8, 100.1, 99.9, 100.3, 99.7, 100.0},
                              {100.1, 100.3, 99.9, 100.2, 100.0, 100.4, 99.8, 100.1});
  EXPECT_EQ(v["verdict"], "within noise") << v.dump();
  EXPECT_GT(v["ratio_dt_ms_interval"][0].get<double>(), 1 / 1.01) << v.dump();
  EXPECT_LT(v["ratio_dt_ms_interval"][1].get<double>(), 1.01) << v.dump();
}

TEST(CompareVerdict, ProcessesNotStepsAreTheSamples) {
  // Three processes a side, 20 steps each, tight within a process but the
  // processes scatter: B's medians are 99, 102.5 and 104 around A's 100-101.
  // Pooled steps would make 60 "independent" samples a side and call B
  // slower (Mann-Whitney p ~ 0.002); over processes the difference is noise.
  const LoadedRun a = group("A", {100.0, 100.5, 101.0}, 20, 0.05);
  const LoadedRun b = group("B", {102.5, 99.0, 104.0}, 20, 0.05);
  const json v = fp32_verdict(a, b);
  EXPECT_EQ(v["sample_unit"], "processes") << v.dump();
  EXPECT_EQ(v["n"], json({3, 3}));
  EXPECT_GT(v["p_value"].get<double>(), 0.3) << v.dump();
  EXPECT_EQ(v["verdict"], "unresolved") << v.dump();  // not a finding; neither a proof of none
  // The same steps as one process a side: no verdict, however many steps
  // (pooled, Mann-Whitney would have called B slower at p ~ 0.002).
  auto as_one_process = [](const LoadedRun& run) {
    LoadedRun one = run;
    one.repeats.clear();
    StepColumns& steps = *one.reports[0].steps;
    steps = StepColumns{};
    std::vector<double>& dt = steps.columns["dt_ms"].values;
    for (const auto& rep : run.repeats)
      for (const double x : *rep.reports[0].steps->of("dt_ms")) {
        steps.step.push_back(int64_t(dt.size()));
        dt.push_back(x);
      }
    return one;
  };
  const json pooled = fp32_verdict(as_one_process(a), as_one_process(b));
  EXPECT_EQ(pooled["verdict"], "cannot judge") << pooled.dump();
  EXPECT_TRUE(pooled["p_value"].is_null()) << pooled.dump();
  EXPECT_NEAR(pooled["ratio_dt_ms"].get<double>(), 1.0155, 0.02) << pooled.dump();  // the difference, shown
}

TEST(CompareVerdict, ThreeProcessesCanShowADifference) {
  // A rank test over 3 vs 3 cannot reach p < 0.05; Welch's t over the
  // per-process medians finds a clear 4 % step.
  const json v = fp32_verdict({100.0, 100.3, 100.1}, {104.0, 104.4, 104.1});
  EXPECT_EQ(v["method"], "welch_t_on_log_dt");
  EXPECT_GT(v["ratio_dt_ms_interval"][0].get<double>(), 1.03) << v.dump();
  EXPECT_LT(v["p_value"].get<double>(), 0.001) << v.dump();
  EXPECT_EQ(v["verdict"], "slower");
  EXPECT_NEAR(v["change_pct"].get<double>(), 4.0, 0.2);
}

TEST(CompareVerdict, OneProcessPerSideGivesNoVerdict) {
  CompareOptions o;
  const json cmp = compare_runs({group("A", {100.0}, 8, 0.5), group("B", {120.0}, 8, 0.5)}, o);
  const json& v = cmp["rungs"][0]["vs_baseline"][1];
  EXPECT_EQ(v["verdict"], "cannot judge") << v.dump();
  EXPECT_NEAR(v["change_pct"].get<double>(), 20, 0.5);  // the difference is shown, not judged
  EXPECT_NE(v["why"].get<std::string>().find("not independent"), std::string::npos) << v.dump();
  EXPECT_NE(cmp["warnings"].dump().find("--repeat 2"), std::string::npos) << cmp["warnings"].dump();
}

// One input with several rungs: dts[rung][process].
LoadedRun ladder_input(const std::string& label, const std::vector<std::vector<double>>& dts) {
  LoadedRun g;
  g.label = label;
  g.path = label;
  for (size_t k = 0; k < dts[0].size(); ++k) {
    LoadedRun r;
    r.label = label;
    for (size_t c = 0; c < dts.size(); ++c) {
      r.cells.push_back("rung" + std::to_string(c));
      r.reports.push_back(report(dts[c][k]));
    }
    g.repeats.push_back(r);
  }
  g.cells = g.repeats.front().cells;
  g.reports = g.repeats.front().reports;
  return g;
}

TEST(CompareVerdict, HolmKeepsTheFamilyOfRungsAtAlpha) {
  // Nine rungs; one differs by 3 % at a raw p of about 0.02, which alone
  // would be "slower". Over nine rungs that is what chance gives an A/A
  // pair about a third of the time: Holm multiplies the smallest p by 9.
  std::vector<std::vector<double>> a(9, {100.0, 101.0, 102.0}), b(9, {100.5, 101.5, 101.0});
  b[4] = {103.3, 104.0, 104.8};
  const json cmp = compare_runs({ladder_input("A", a), ladder_input("B", b)}, CompareOptions{});
  const json& v = cmp["rungs"][4]["vs_baseline"][1];
  EXPECT_LT(v["p_value"].get<double>(), 0.05) << v.dump();
  EXPECT_EQ(v["tests_in_family"], 9);
  EXPECT_NEAR(v["p_holm"].get<double>(), std::min(1.0, 9 * v["p_value"].get<double>()), 1e-12);
  EXPECT_EQ(v["verdict"], "unresolved") << v.dump();  // not a finding after the adjustment
  EXPECT_NE(v["why"].get<std::string>().find("adjustment over 9 rungs"), std::string::npos) << v.dump();
  // A real change on every rung survives the adjustment.
  std::vector<std::vector<double>> c(9, {110.0, 110.5, 111.0});
  const json all = compare_runs({ladder_input("A", a), ladder_input("C", c)}, CompareOptions{});
  for (const auto& row : all["rungs"]) EXPECT_EQ(row["vs_baseline"][1]["verdict"], "slower") << row.dump();
}

// compare's ConfigError message for these inputs; a failure if it compared them.
std::string refusal(const LoadedRun& a, const LoadedRun& b) {
  try {
    compare_runs({a, b}, CompareOptions{});
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "the repeats were compared instead of refused";
  return "";
}

TEST(CompareRepeats, RepeatsThatMeasuredSomethingElseAreRefused) {
  LoadedRun a = group("A", {100.0, 100.1, 100.2, 100.3});
  LoadedRun b = group("B", {100.0, 100.1, 100.2, 100.3});
  b.repeats[2].reports[0].config.batch = 8;  // one repeat at another batch
  b.repeats[2].path = "runs/b3";
  const std::string what = refusal(a, b);
  EXPECT_NE(what.find("input B"), std::string::npos) << what;
  EXPECT_NE(what.find("config.batch is 4"), std::string::npos) << what;
  EXPECT_NE(what.find("but 8 in runs/b3"), std::string::npos) << what;
}

// A switch that one build did not declare (its report's switches section
// has no entry: cast-cache before 2026-11-28) was off there, and is no
// difference, whichever input comes first; one that both declared and that
// differs is. A group (fused) is compared by its parts.
TEST(CompareInputs, ASwitchOnlyOneBuildDeclaredIsNoDifference) {
  const SwitchDecl& cast_cache = *find_switch("cast-cache");
  auto build = [&](const std::string& label, bool declares_cast_cache, bool cast_cache_on) {
    LoadedRun g = group(label, {100.0});
    for (RungReport& r : g.reports) {
      r.config.sw.set(cast_cache, cast_cache_on);
      SwitchEffects effects;
      for (const SwitchDecl* s : all_switches())
        if (declares_cast_cache || s != &cast_cache) effects[s->name] = SwitchEffect::off("a test's");
      r.switches = effects;
    }
    return g;
  };
  const LoadedRun before = build("before", false, false), after = build("after", true, true);
  EXPECT_NO_THROW(compare_runs({before, after}, CompareOptions{}));
  EXPECT_NO_THROW(compare_runs({after, before}, CompareOptions{}));
  try {
    compare_runs({build("off", true, false), after}, CompareOptions{});
    ADD_FAILURE() << "a switch both builds declared, off in one and on in the other, was compared";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("config.switches.cast-cache is false"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("config.switches.fused "), std::string::npos) << e.what();
  }
}

TEST(CompareRepeats, RepeatsFromAnotherEnvironmentAreRefused) {
  LoadedRun a = group("A", {100.0, 100.1, 100.2, 100.3});
  for (auto& r : a.repeats) r.reports[0].environment = environment("h1", "H100");
  a.repeats[1].reports[0].environment = environment("h1", "H200");
  a.repeats[1].path = "runs/a2";
  LoadedRun b = group("B", {100.0, 100.1, 100.2, 100.3});
  const std::string what = refusal(a, b);
  EXPECT_NE(what.find("environment.device.name is \"H100\""), std::string::npos) << what;
  EXPECT_NE(what.find("runs/a2"), std::string::npos) << what;
}

// A summary copied without its run directory: every listed report missing.
// Refused (exit 2), naming the files; with some there, compared, the others
// named in a warning.
TEST(CompareInputs, MissingReportsAreNamedOrRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "ladder_missing_reports";
  fs::remove_all(dir);
  fs::create_directories(dir / "fp32");
  const json rows = json::array({{{"cell", "fp32"}, {"rung", "fp32"}, {"status", "ok"}, {"report", "fp32/report.json"}},
                                 {{"cell", "flash"}, {"rung", "flash"}, {"status", "ok"}, {"report", "flash/report.json"}}});
  std::ofstream(dir / "summary.json") << json{{"schema_version", 3}, {"kind", "ladder.run_summary"}, {"run_id", "r"},
                                              {"repeats", 1}, {"rows", rows}}.dump();
  try {
    load_run(dir.string(), "A");
    ADD_FAILURE() << "a summary without any of its reports was read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("fp32/report.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("none of the rung reports"), std::string::npos) << e.what();
  }
  // A complete report as ladder writes it (a recorded one), at the shape of the other input.
  json r = json::parse(std::ifstream(fs::path(LADDER_SOURCE_DIR) / "reports" / "results" / "2026-11-25-cpu-trust" /
                                     "d6" / "fp32" / "report.json"));
  r["config"] = json(complete_report(100.0).config);
  std::ofstream(dir / "fp32" / "report.json") << r.dump();
  const LoadedRun run = load_run(dir.string(), "A");
  ASSERT_EQ(run.missing_reports.size(), 1u);
  EXPECT_NE(run.missing_reports[0].find("flash/report.json"), std::string::npos);
  const json cmp = compare_runs({run, group("B", {101.0, 102.0})}, CompareOptions{});
  EXPECT_NE(cmp["warnings"].dump().find("flash/report.json"), std::string::npos) << cmp["warnings"].dump();
}

// A report of schema 1 (the 2026-11-23 H100 run) is upgraded and read into
// the struct: its switches under their declared names, the fields recorded
// since as unknown or as what the harness did then.
TEST(ReportLoader, Schema1ReportIsUpgradedAndReadStrictly) {
  namespace fs = std::filesystem;
  const fs::path file = fs::path(LADDER_SOURCE_DIR) / "reports" / "results" / "2026-11-23-gpu" /
                        "h100-gpt2-124m-b16t1024" / "vocab-pad" / "report.json";
  ASSERT_EQ(json::parse(std::ifstream(file))["schema_version"], 1);
  const RungReport r = read_rung_report(file.string());
  EXPECT_EQ(r.schema_version, kSchemaVersion);
  EXPECT_EQ(r.switches->count("fused-adamw"), 1u) << fields::to_json(*r.switches).dump();
  EXPECT_EQ(r.switches->count("fused_adamw"), 0u);
  EXPECT_EQ(r.timing->warmup.stopped, "fixed");
  EXPECT_EQ(r.timing->warmup.steps_run, r.timing->warmup_steps_excluded);
  EXPECT_FALSE(r.timing->noise.has_value());
  EXPECT_FALSE(r.timing->host_steal_ms.has_value());
  EXPECT_FALSE(r.memory->measured.allocated_active_valid);
  EXPECT_NE(r.memory->measured.allocated_active_note.find("not recorded"), std::string::npos);
  EXPECT_FALSE(r.environment->versions.cublaslt.has_value());  // absent: not recorded then
  EXPECT_DOUBLE_EQ(run_figure("dt_ms_median").of_report(r).value(),
                   json::parse(std::ifstream(file))["summary"]["dt_ms"]["median"].get<double>());
}

// A recorded two-rank report's per_rank reads as each rank's facts and its
// step columns beside them, and writes back the same JSON; the across-ranks
// spread is of the same medians.
TEST(ReportLoader, RecordedRanksReadAsTheirFacts) {
  namespace fs = std::filesystem;
  const fs::path file = fs::path(LADDER_SOURCE_DIR) / "reports" / "results" / "2026-11-25-cpu-trust" / "d1" / "ddp" /
                        "report.json";
  const RungReport r = read_rung_report(file.string());
  ASSERT_TRUE(r.ddp && *r.ddp);
  const DdpSection& ddp = **r.ddp;
  const std::vector<RankFacts> ranks = ddp.rank_facts();
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].rank, 0);
  EXPECT_EQ(ranks[1].rank, 1);
  EXPECT_EQ(ranks[1].local_rank, 1);
  EXPECT_FALSE(ranks[0].phases_ms.has_value());  // recorded before per-rank phases (2026-12-02)
  EXPECT_DOUBLE_EQ(ranks[0].median.at("dt_ms"), 777.332221);
  EXPECT_DOUBLE_EQ(ranks[1].median.at("dt_ms"), 775.145701);
  EXPECT_DOUBLE_EQ(ddp.across_ranks_of_medians.at("dt_ms").max, 777.332221);
  const json recorded = json::parse(std::ifstream(file))["ddp"]["per_rank"];
  EXPECT_EQ(ddp.per_rank[1].columns.at("dt_ms").values.size(), recorded[1]["dt_ms"].size());
  EXPECT_FALSE(ddp.per_rank[1].columns.at("dt_ms").integer);
  EXPECT_EQ(ddp.per_rank[1].columns.count("rank"), 0u);  // a fact, not a column
  EXPECT_EQ(json(ddp.per_rank).dump(), recorded.dump());  // byte for byte
  // An H100 run's ranks: their byte counts are columns of integers, and stay so.
  const fs::path h100 = fs::path(LADDER_SOURCE_DIR) / "reports" / "results" / "2026-11-27-h100-80gb-hbm3" / "ddp" /
                        "ddp" / "report.json";
  const RungReport h = read_rung_report(h100.string());
  EXPECT_TRUE((*h.ddp)->per_rank[0].columns.at("sent_bytes_ring").integer);
  EXPECT_EQ(json((*h.ddp)->per_rank).dump(), json::parse(std::ifstream(h100))["ddp"]["per_rank"].dump());
  json bad = recorded[1];
  bad["dt_ms"][2] = "slow";
  try {
    fields::from_json<RankFigures>(bad, "report.json.ddp.per_rank[1]");
    ADD_FAILURE() << "a rank's column with a string in it was read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("report.json.ddp.per_rank[1].dt_ms[2]: is \"slow\""), std::string::npos)
        << e.what();
  }
}

// Every recorded report of this schema version reads into the struct and
// writes back the same JSON: no field is lost or changed by the typed
// sections (the config by its field table, the step columns, the summary,
// each rank's figures). The one difference allowed is the config's of an
// older build: the fields added since are written with the value that build
// ran with (the field table's if_absent), and a group switch (fused) is its
// parts again, a part added since (cast-cache) off.
TEST(ReportLoader, EveryRecordedReportOfThisVersionReadsBackAsWritten) {
  namespace fs = std::filesystem;
  int checked = 0, configs_completed = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(LADDER_SOURCE_DIR) / "reports" / "results")) {
    if (e.path().filename() != "report.json") continue;
    const json recorded = json::parse(std::ifstream(e.path()));
    if (recorded.value("schema_version", 0) != kSchemaVersion) continue;  // upgraded when read: not the same
    const RungReport r = read_rung_report(e.path().string());
    bool completed = false;
    for (const json& op : json::diff(recorded, fields::to_json(r))) {
      const std::string path = op["path"];
      const bool added_field = op["op"] == "add" && path.rfind("/config/", 0) == 0;
      const SwitchDecl* group = path.rfind("/config/switches/", 0) == 0 ? find_switch(path.substr(17)) : nullptr;
      completed = completed || added_field;
      EXPECT_TRUE(added_field || (group && group->role == SwitchRole::kGroup)) << e.path() << ": " << op.dump();
    }
    configs_completed += completed;
    ++checked;
  }
  EXPECT_GT(checked, 200);
  EXPECT_LT(configs_completed, checked);  // this build's own reports read back whole
}

// Schema 1's ddp entry kept a note in a string field, cuda_graph, where a
// switch's cuda_graph is now its typed figures (variants/config/switch_effect.h):
// the note joins the entry's reason, and the rest reads as typed.
TEST(ReportLoader, Schema1DdpEntrysGraphNoteJoinsItsReason) {
  namespace fs = std::filesystem;
  const fs::path file = fs::path(LADDER_SOURCE_DIR) / "reports" / "results" / "2026-11-23-gpu" /
                        "h100-gpt2-124m-b16t1024" / "ddp" / "report.json";
  ASSERT_TRUE(json::parse(std::ifstream(file))["switches"]["ddp"]["cuda_graph"].is_string());
  const RungReport r = read_rung_report(file.string());
  const SwitchEffect& ddp = r.switches->at("ddp");
  EXPECT_FALSE(ddp.cuda_graph.has_value());
  EXPECT_NE(ddp.reason.find("1 rank(s); each reads its own rows of the token stream; cuda graph: off: the all-reduce "
                            "hooks run on the host during backward"),
            std::string::npos)
      << ddp.reason;
  ASSERT_TRUE(ddp.grad_sync.has_value());
  EXPECT_EQ(ddp.grad_sync->buckets.size(), 20u);
  EXPECT_EQ(ddp.grad_sync->buckets.back().bytes, 154533888);  // wte, alone in the last bucket
  EXPECT_FALSE(ddp.took_effect());  // one rank
}

// A report with a key no schema has is refused, naming the file and the path.
TEST(ReportLoader, AnUnknownFieldIsRefusedByItsPath) {
  namespace fs = std::filesystem;
  json r = json::parse(std::ifstream(fs::path(LADDER_SOURCE_DIR) / "reports" / "results" / "2026-11-25-cpu-trust" /
                                     "d6" / "fp32" / "report.json"));
  r["timing"]["warmup"]["patience"] = 3;
  const fs::path file = fs::path(::testing::TempDir()) / "ladder_unknown_field.json";
  std::ofstream(file) << r.dump();
  try {
    read_rung_report(file.string());
    ADD_FAILURE() << "a report with an unknown field was read";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file.string()), std::string::npos) << what;
    EXPECT_NE(what.find("timing.warmup.patience"), std::string::npos) << what;
    EXPECT_NE(what.find("no such field"), std::string::npos) << what;
  }
}

// An input with no environment to read is never an A/A pair.
TEST(CompareInputs, AnUnknownEnvironmentIsNotTheSame) {
  const json cmp = compare_runs({group("A", {100.0, 101.0}), group("B", {100.0, 101.0})}, CompareOptions{});
  EXPECT_EQ(cmp["environment_unknown_in"], json({"A", "B"}));
  const Document doc = comparison_document(comparison_from_json(cmp));
  std::string lines;
  for (const auto& l : doc.preamble) lines += l.text + "\n";
  EXPECT_EQ(lines.find("same environment"), std::string::npos) << lines;
  EXPECT_NE(lines.find("subject: unknown"), std::string::npos) << lines;
}

// Two builds of ladder are no A/A pair: the commit each report names is the
// subject where they differ, and not where they agree.
TEST(CompareInputs, TwoCommitsAreTheSubject) {
  auto built = [](const std::string& label, const char* commit) {
    LoadedRun g = group(label, {100.0, 101.0});
    for (auto& r : g.repeats) r.reports[0].suite = SuiteSection{"ladder", "test", commit, {"ladder", "run"}};
    g.reports = g.repeats.front().reports;
    return g;
  };
  json cmp = compare_runs({built("A", "716bffc"), built("B", "4d9afcbe2d95-dirty")}, CompareOptions{});
  EXPECT_EQ(cmp["subject"]["suite.git_commit"], json({"716bffc", "4d9afcbe2d95-dirty"})) << cmp["subject"].dump();
  cmp = compare_runs({built("A", "716bffc"), built("B", "716bffc")}, CompareOptions{});
  EXPECT_FALSE(cmp["subject"].contains("suite.git_commit")) << cmp["subject"].dump();
}

// The machine's speed is named per rung where the speed probe's spread
// across an input's processes accounts for theirs (reports/stats/machine_speed.h),
// in the input's noise causes and on a noise: line of the document.
TEST(CompareInputs, NamesTheMachinesSpeedWhereTheProbeExplainsTheSpread) {
  auto probed = [](LoadedRun g, const std::vector<double>& speeds) {
    for (size_t k = 0; k < g.repeats.size(); ++k) {
      g.repeats[k].reports[0].timing = Timing{};
      NoiseSection noise;
      noise.steal_pct_of_wall = 0.0;
      noise.probe = ProbeSection{};
      noise.probe->speed_index_per_s = speeds[k];
      g.repeats[k].reports[0].timing->noise = noise;
    }
    return g;
  };
  const json cmp = compare_runs({probed(group("A", {850, 900, 950, 960}), {100, 95, 89.5, 88}),
                                 probed(group("B", {850, 900, 950, 960}), {100, 99.5, 100.5, 99.8})},
                                CompareOptions{});
  const std::string cause = "fp32: the machine's speed varied: probe +-6.6 % across processes (dt +-6.3 %)";
  EXPECT_EQ(cmp["inputs"][0]["noise"]["causes"], json({cause}));
  EXPECT_TRUE(cmp["inputs"][1]["noise"]["causes"].empty()) << cmp["inputs"][1].dump();  // the probe held steady
  EXPECT_NEAR(cmp["inputs"][1]["noise"]["probe_half_range_pct"].get<double>(), 0.5, 0.01);
  const Document doc = comparison_document(comparison_from_json(cmp));
  std::string noise;
  for (const auto& l : doc.preamble)
    if (l.lead == "noise:") noise += l.text + "\n";
  EXPECT_EQ(noise, "A: " + cause + "\n");
}

// The ladder shape: each input's x fp32 with its interval, and B's over
// A's with the interval of the two inputs' per-round speedups as
// independent samples (Welch on the logs).
TEST(CompareInputs, TheLadderShapeCarriesIntervals) {
  auto named = [](LoadedRun g) {
    g.cells = {"fp32", "flash"};
    for (auto& r : g.repeats) r.cells = {"fp32", "flash"};
    return g;
  };
  const std::vector<double> fp32_a = {100, 102, 101}, flash_a = {50, 50.5, 50.8};
  const std::vector<double> fp32_b = {100, 101, 99}, flash_b = {60, 61, 59.5};
  const json cmp = compare_runs({named(ladder_input("A", {fp32_a, flash_a})), named(ladder_input("B", {fp32_b, flash_b}))},
                                CompareOptions{});
  const json& flash = cmp["ladder_shape"][1];
  ASSERT_EQ(flash["rung"], "flash") << flash.dump();
  std::vector<double> sa, sb;  // tokens/s over fp32's, per round: fp32's dt over flash's
  for (int k = 0; k < 3; ++k) {
    sa.push_back(fp32_a[k] / flash_a[k]);
    sb.push_back(fp32_b[k] / flash_b[k]);
  }
  const RatioInterval want = ratio_of_independent(sa, sb);
  ASSERT_TRUE(flash["ratio_to_baseline_interval"][1].is_array()) << flash.dump();
  EXPECT_NEAR(flash["ratio_to_baseline_interval"][1][0].get<double>(), want.lo, 1e-9);
  EXPECT_NEAR(flash["ratio_to_baseline_interval"][1][1].get<double>(), want.hi, 1e-9);
  EXPECT_LT(want.hi, 1.0);  // B's flash gains less over its fp32 than A's
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(flash["speedup_vs_fp32_interval"][i].is_array()) << flash.dump();
  EXPECT_TRUE(cmp["ladder_shape"][0]["ratio_to_baseline_interval"][1].is_null());  // fp32 over itself
}

// The comparison's JSON reads back into the model the renderers take, field
// for field: every recorded comparison (the goldens, made from recorded
// runs by `ladder compare --format json`) is written again byte for byte.
TEST(ComparisonJson, EveryRecordedComparisonReadsBackAsWritten) {
  size_t read = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(LADDER_FIXTURES_DIR) + "/golden")) {
    const auto& path = entry.path();
    if (path.extension() != ".json" || path.filename().string().rfind("compare-", 0) != 0) continue;
    std::ifstream in(path);
    const json written = json::parse(in);
    EXPECT_EQ(comparison_json(comparison_from_json(written)).dump(2), written.dump(2)) << path;
    ++read;
  }
  EXPECT_GE(read, 4u);
}

}  // namespace
}  // namespace ladder
