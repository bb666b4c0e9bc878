// tests/reports/test_reporters.cpp: the output formats (reports/render/reporter.h) on
// documents built here, and `--format`'s list: what each format writes of
// a table's cells, and what a bad or unfitting name is told.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/render/reporter.h"
#include "reports/render/documents/run_document.h"
#include "variants/config/config.h"

namespace ladder {
namespace {

using nlohmann::json;

// Two rows of one rung (its name shown once), a section line and a missing number.
Document two_inputs() {
  Document doc;
  doc.preamble = {{"A: runs/a"}};
  Table t;
  t.columns = {{"rung", "rung", "", Align::kLeft}, {"input", "input", "", Align::kLeft},
               {"dt_ms_median", "dt_ms", ""}, {"verdict", "verdict", "", Align::kLeft}};
  t.rows.push_back({{{"fp32", "fp32"}, {"A", nullptr}, number_cell(12.3456, "{:.2f}"), {"", ""}}});
  t.rows.push_back({{{"", "fp32"}, {"B", nullptr}, number_cell(std::nullopt, "{:.2f}"),
                     {"slower, by far", nullptr, Tone::kBad}}});
  t.rows.push_back({{}, "-- peers --"});
  t.notes = {{"8.3 % in bf16", "noise:", Tone::kWarn}};
  doc.tables = {t};
  doc.notes = {{"how to read it"}};
  doc.data = {{"kind", "test"}};
  return doc;
}

std::string render(const std::string& format, const Document& doc, bool color = false) {
  return find_reporter("--format", format, doc.kind).render(doc, {color});
}

TEST(Reporters, TextPadsColumnsToTheWidestCellAndColoursOnlyWhenAsked) {
  const std::string out = render("text", two_inputs());
  EXPECT_EQ(out,
            "A: runs/a\n"
            "\n"
            "rung input dt_ms verdict\n"
            "fp32 A     12.35\n"
            "     B         - slower, by far\n"
            "-- peers --\n"
            "noise: 8.3 % in bf16\n"
            "how to read it\n");
  const std::string painted = render("text", two_inputs(), true);
  EXPECT_NE(painted.find("\033[31mslower, by far\033[0m"), std::string::npos) << painted;
  EXPECT_NE(painted.find("\033[33mnoise:\033[0m 8.3 %"), std::string::npos) << painted;
}

TEST(Reporters, CsvWritesValuesUnderKeysAndQuotes) {
  EXPECT_EQ(render("csv", two_inputs()),
            "rung,input,dt_ms_median,verdict\n"
            "fp32,A,12.3456,\n"
            "fp32,B,,\"slower, by far\"\n");
}

TEST(Reporters, MarkdownWritesGitHubTables) {
  Document doc = two_inputs();
  doc.tables[0].rows[0].cells[3].text = "a|b";
  EXPECT_EQ(render("md", doc),
            "```\nA: runs/a\n```\n\n"
            "| rung | input | dt_ms | verdict |\n"
            "|---|---|---:|---|\n"
            "| fp32 | A | 12.35 | a\\|b |\n"
            "|  | B | - | slower, by far |\n"
            "| *-- peers --* |  |  |  |\n\n"
            "noise: 8.3 % in bf16\n\n"
            "how to read it\n\n");
  EXPECT_EQ(&find_reporter("--format", "markdown", DocumentKind::kRun), &find_reporter("-f", "md", DocumentKind::kRun));
}

TEST(Reporters, JsonWritesTheModel) { EXPECT_EQ(json::parse(render("json", two_inputs()))["kind"], "test"); }

TEST(Reporters, ABadFormatNamesTheOptionTheValueAndTheChoices) {
  try {
    find_reporter("--format", "yaml", DocumentKind::kRun);
    ADD_FAILURE() << "yaml was accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), ("--format: 'yaml' is not a format; expected one of " +
                            format_names(DocumentKind::kRun)).c_str());
  }
  EXPECT_THROW(find_reporter("--format", "gbench", DocumentKind::kComparison), ConfigError);
  EXPECT_EQ(format_names(DocumentKind::kComparison).find("gbench"), std::string::npos);
  // HTML renders any document: a run's page as well as a comparison's.
  EXPECT_NE(format_names(DocumentKind::kRun).find("html"), std::string::npos);
  EXPECT_NE(format_names(DocumentKind::kComparison).find("html"), std::string::npos);
}

// What only a page shows (a title, charts, sections, a line's kind) leaves
// the plain formats' output as it was.
// A format is one file: every reports/formats/<name>.cpp is in the generated
// list under its name, text (the default) first, then the others by name.
TEST(Reporters, EveryFormatFileIsListedTextFirst) {
  std::vector<std::string> files;
  for (const auto& f : std::filesystem::directory_iterator(std::string(LADDER_SOURCE_DIR) + "/reports/formats"))
    if (f.path().extension() == ".cpp") files.push_back(f.path().stem().string());
  std::sort(files.begin(), files.end());
  files.erase(std::find(files.begin(), files.end(), "text"));
  files.insert(files.begin(), "text");
  std::vector<std::string> listed;
  for (const Reporter* r : reporters()) listed.push_back(r->name());
  EXPECT_EQ(listed, files);
}

TEST(Reporters, PlainFormatsLeaveOutWhatOnlyAPageShows) {
  Document doc = two_inputs();
  const std::string text = render("text", doc), csv = render("csv", doc), md = render("md", doc);
  doc.title = "ladder compare: A vs B";
  doc.subtitle = "Comparing device.name";
  doc.preamble[0].kind = LineKind::kRestated;
  Chart chart;
  chart.id = "chart-tokens";
  chart.categories = {"fp32"};
  chart.series = {{"A", {ChartPoint{12.0, {}, {}, {}, "", ""}}}};
  doc.charts = {chart};
  doc.sections = {{"Environment", Placement::kBottom, {{"a line"}}, {doc.tables[0]}, false, "environment"}};
  doc.tables[0].tag = "rungs";
  doc.tables[0].rows[0].tag = "peer";
  doc.tables[0].rows[0].cells[1].swatch = "#4e79a7";
  EXPECT_EQ(render("text", doc), text);
  EXPECT_EQ(render("csv", doc), csv);
  EXPECT_EQ(render("md", doc), md);
}


// The run's table: one row per rung, machine values under the keys (peak in
// bytes), a failed row blank but for its reason. Cells are looked up by
// their column's key, so the test holds whatever figures are declared.
TEST(Reporters, RunTableAsCsv) {
  const json row = {{"cell", "fp32"}, {"rung", "fp32"}, {"status", "ok"}, {"dt_ms_median", 100.5},
                    {"tokens_per_s_median", 1000.0}, {"speedup_vs_fp32", 1.0}, {"speedup_vs_previous", nullptr},
                    {"mfu_pct_datasheet", nullptr}, {"mfu_pct_measured_roofline", 60.0}, {"peak_bytes", 3 << 29},
                    {"mfu_pct", 60.0}, {"markers", {{"mfu_pct", "p"}}}, {"ops_per_step", 420},
                    {"op_counts", {{"cpu_ops_per_step", 420}}}, {"parity", {{"status", "baseline"}}}};
  const json failed = {{"cell", "bf16"}, {"rung", "bf16"}, {"status", "failed"}, {"reason", "oom"}};
  const Document doc = summary_document({{"rows", {row, failed}}, {"missing", json::array()}}, "summary.json");
  const std::string csv = render("csv", doc);
  auto split = [](const std::string& line) {
    std::vector<std::string> fields;
    size_t start = 0;
    for (size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1)
      fields.push_back(line.substr(start, comma - start));
    fields.push_back(line.substr(start));
    return fields;
  };
  std::vector<std::vector<std::string>> lines;
  for (size_t start = 0, nl; (nl = csv.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(split(csv.substr(start, nl - start)));
  ASSERT_EQ(lines.size(), 3u) << csv;
  const auto& header = lines[0];
  ASSERT_EQ(header.size(), doc.tables[0].columns.size()) << csv;
  auto cell = [&](size_t line, const std::string& key) {
    const auto at = std::find(header.begin(), header.end(), key);
    EXPECT_NE(at, header.end()) << key << " is not a column: " << csv;
    return at == header.end() ? std::string("?") : lines[line][size_t(at - header.begin())];
  };
  EXPECT_EQ(header.front(), "rung");
  EXPECT_EQ(header.back(), "reason");
  EXPECT_EQ(cell(1, "dt_ms_median"), "100.5");
  EXPECT_EQ(cell(1, "tokens_per_s_median"), "1000.0");
  EXPECT_EQ(cell(1, "speedup_vs_fp32"), "1.0");
  EXPECT_EQ(cell(1, "speedup_vs_previous"), "");
  EXPECT_EQ(cell(1, "mfu_pct"), "60.0p");  // the text: which peak it is of
  EXPECT_EQ(cell(1, "peak_bytes"), "1610612736");
  EXPECT_EQ(cell(1, "ops_per_step"), "420");
  EXPECT_EQ(cell(1, "parity"), "baseline");
  EXPECT_EQ(cell(2, "status"), "failed");
  EXPECT_EQ(cell(2, "dt_ms_median"), "");
  EXPECT_EQ(cell(2, "reason"), "oom");
}

}  // namespace
}  // namespace ladder
