// tests/reports/test_html_report.cpp: the HTML page (reports/render/html/html_report.h) of
// documents. The comparison of tests/fixtures/comparison.json
// (comparison_document) has its five charts, names every input and the
// subject, shows missing rungs as missing, stacks the breakdown in
// proportion and names its largest kernels, escapes strings, survives nulls
// and reads nothing but the document; a run's document has its charts; a
// chart without data shows its note and no axes; an interval draws a
// whisker. Pages are written to TempDir() for a look.
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/model/comparison/comparison.h"
#include "reports/render/documents/comparison_document.h"
#include "reports/render/html/html_report.h"
#include "reports/render/documents/run_document.h"

namespace ladder {
namespace {

using nlohmann::json;

json load_fixture() {
  const std::string path = std::string(LADDER_FIXTURES_DIR) + "/comparison.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return json::parse(in);
}

std::string page_of(const json& cmp) { return render_html(comparison_document(comparison_from_json(cmp))); }

bool contains(const std::string& page, const std::string& needle) { return page.find(needle) != std::string::npos; }

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

// The <svg> of chart `id`, up to its end.
std::string chart_of(const std::string& page, const std::string& id) {
  const size_t at = page.find("id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  const size_t start = page.rfind("<svg", at);
  return page.substr(start, page.find("</svg>", at) - start);
}

void write_for_a_look(const std::string& name, const std::string& page) {
  const std::string out = ::testing::TempDir() + name;
  std::ofstream(out) << page;
  EXPECT_TRUE(std::ifstream(out).good()) << out;
}

TEST(HtmlReport, FixtureHasAllFiveChartsAndIsWritten) {
  const std::string page = page_of(load_fixture());
  for (const char* id : {"chart-tokens", "chart-speedup", "chart-memory", "chart-dt", "chart-breakdown"})
    EXPECT_TRUE(contains(chart_of(page, id), "<svg class=\"chart")) << id;
  for (const char* id : {"chart-tokens", "chart-speedup", "chart-memory", "chart-dt"})
    EXPECT_GT(count(chart_of(page, id), "class=\"mark"), 0u) << id;
  EXPECT_TRUE(contains(page, "<!DOCTYPE html>"));
  EXPECT_FALSE(contains(page, "http://fonts") || contains(page, "<script src") || contains(page, "<link"))
      << "the page must not load anything from the network";
  write_for_a_look("comparison.html", page);
}

// Every <rect> of the breakdown chart with its category and height, in order.
std::vector<std::pair<std::string, double>> segments(const std::string& page) {
  std::vector<std::pair<std::string, double>> out;
  const std::string svg = chart_of(page, "chart-breakdown");
  for (size_t at = svg.find("data-category=\""); at != std::string::npos; at = svg.find("data-category=\"", at + 1)) {
    const size_t start = at + 15, end = svg.find('"', start);
    const size_t h = svg.find("height=\"", end) + 8;
    out.emplace_back(svg.substr(start, end - start), std::stod(svg.substr(h, svg.find('"', h) - h)));
  }
  return out;
}

TEST(HtmlReport, BreakdownStacksEachCategoryInProportion) {
  json cmp = load_fixture();
  // fp32 of A: 40 ms GEMM, 20 elementwise, 10 loss; B: the same GEMM, the elementwise band halved.
  json& a = cmp["rungs"][0]["inputs"][0];
  json& b = cmp["rungs"][0]["inputs"][1];
  a["op_breakdown_ms"] = {{"gemm", 40.0}, {"elementwise_norm", 20.0}, {"softmax_loss", 10.0}, {"attention", 0.0}};
  b["op_breakdown_ms"] = {{"gemm", 40.0}, {"elementwise_norm", 10.0}, {"softmax_loss", 10.0}};
  const std::string page = page_of(cmp);
  const auto segs = segments(page);
  ASSERT_EQ(segs.size(), 6u);        // zero-ms categories draw nothing
  EXPECT_EQ(segs[0].first, "gemm");  // the base of the stack
  EXPECT_EQ(segs[1].first, "elementwise_norm");
  EXPECT_EQ(segs[2].first, "softmax_loss");
  EXPECT_NEAR(segs[0].second / segs[1].second, 2.0, 0.02);  // 40 : 20 ms
  EXPECT_NEAR(segs[4].second / segs[1].second, 0.5, 0.02);  // B's elementwise band is half of A's
  EXPECT_NEAR(segs[3].second, segs[0].second, 0.01);        // the same GEMM time
  EXPECT_TRUE(contains(page, "A \u00b7 fp32 \u00b7 elementwise/norm: 20.0 ms per step"));  // the hover title
  for (const char* label :
       {"GEMM", "attention", "elementwise/norm", "loss", "optimizer", "memcpy/memset", "communication", "idle/other"})
    EXPECT_TRUE(contains(page, std::string(">") + label + "</text>")) << label;  // the legend
}

TEST(HtmlReport, AChartWithoutDataShowsItsNoteAndNoAxes) {
  const std::string svg = chart_of(page_of(load_fixture()), "chart-breakdown");  // the fixture has no breakdown
  EXPECT_TRUE(contains(svg, "no breakdown in these inputs")) << svg;
  EXPECT_TRUE(contains(svg, "Where a step&#39;s time goes")) << svg;  // its title
  for (const char* drawn : {"class=\"axis\"", "class=\"grid\"", "class=\"mark", "class=\"na\"", "class=\"band\""})
    EXPECT_FALSE(contains(svg, drawn)) << drawn << " in " << svg;

  Document doc;
  Chart c;
  c.id = "chart-nothing";
  c.title = "Nothing yet";
  c.categories = {"fp32", "bf16"};
  c.series = {{"A", {ChartPoint{}, ChartPoint{{}, {}, {}, {}, "failed", ""}}}};
  c.empty_note = "no <values> measured";
  doc.charts = {c};
  const std::string hand = chart_of(render_html(doc), "chart-nothing");
  EXPECT_TRUE(contains(hand, "no &lt;values&gt; measured")) << hand;
  EXPECT_FALSE(contains(hand, "class=\"axis\"") || contains(hand, "failed")) << hand;
}

TEST(HtmlReport, NamesTheLargestKernelsOfEachBand) {
  json cmp = load_fixture();
  json& a = cmp["rungs"][0]["inputs"][0];
  json rows = json::array();
  for (int k = 0; k < 7; ++k)
    rows.push_back({{"name", fmt::format("void at::native::elementwise_kernel<CUDAFunctor_add<float> >#{}", k)},
                    {"ms", 6.0 - k},
                    {"calls", 48.0}});
  a["op_breakdown_top"] = {{"gemm", {{{"name", "nvjet_sm90_tst_256x128"}, {"ms", 8.0}, {"calls", 24.0}}}},
                           {"elementwise_norm", rows},
                           {"communication", json::array()}};
  const std::string page = page_of(cmp);
  const size_t at = page.find("<details class=\"breakdown-top\">");
  ASSERT_NE(at, std::string::npos);
  EXPECT_TRUE(contains(page, "<h2>What makes up each band</h2>"));
  const std::string section = page.substr(at, page.find("</details>", at) - at);
  EXPECT_TRUE(contains(section, "<summary>" + cmp["rungs"][0]["rung"].get<std::string>() + "</summary>"));
  // Escaped, five rows per category and input, GEMM first as in the chart.
  EXPECT_TRUE(contains(section, "elementwise_kernel&lt;CUDAFunctor_add&lt;float&gt; &gt;#4"));
  EXPECT_FALSE(contains(section, "#5"));
  EXPECT_LT(section.find("nvjet_sm90_tst_256x128"), section.find("elementwise_kernel"));
  EXPECT_TRUE(contains(section, "<td class=\"num\">6.000</td><td class=\"num\">48.0</td>")) << section;
  EXPECT_EQ(count(section, "<tr><td>"), 6u);  // 1 GEMM + 5 elementwise
  EXPECT_FALSE(contains(section, "</span>communication</td>"));
  // A rung without names gets no collapsible table.
  EXPECT_EQ(page.find("<details class=\"breakdown-top\">", at + 1), std::string::npos);
  EXPECT_FALSE(contains(page_of(load_fixture()), "What makes up each band"));
}

TEST(HtmlReport, NamesEveryInputAndTheSubject) {
  const json cmp = load_fixture();
  const std::string page = page_of(cmp);
  for (const auto& in : cmp["inputs"]) {
    EXPECT_TRUE(contains(page, in["label"].get<std::string>()));
    EXPECT_TRUE(contains(page, "<code>" + in["path"].get<std::string>() + "</code>"));
    EXPECT_TRUE(contains(page, in["run_id"].get<std::string>()));
  }
  EXPECT_TRUE(contains(page, "<p class=\"subject-line\">Comparing device.name, host</p>"));
  EXPECT_TRUE(contains(page, "<h2>What differs</h2>"));
  for (const auto& [key, values] : cmp["subject"].items()) {
    EXPECT_TRUE(contains(page, "<code>" + key + "</code>")) << key;
    for (const auto& v : values) EXPECT_TRUE(contains(page, v.get<std::string>())) << v;
  }
  EXPECT_TRUE(contains(page, "<tr class=\"differs\"><td><code>device.name</code>")) << "the environment marks it";
  EXPECT_TRUE(contains(page, "<li>rung &#39;ddp&#39;: missing in A, B</li>")) << "the fixture's warning, escaped";
  EXPECT_TRUE(contains(page, "<td class=\"num\">2.61\u00d7</td>")) << "B's geomean against A";
}

TEST(HtmlReport, MissingRungSaysMissingInItsRowsAndCharts) {
  const std::string page = page_of(load_fixture());
  const size_t table = page.find("<td>ddp</td>");
  ASSERT_NE(table, std::string::npos);
  const std::string rows = page.substr(table, page.find("</tbody>", table) - table);
  EXPECT_EQ(count(rows, "<span class=\"tone bad\">missing</span>"), 2u) << rows;    // each input's status
  EXPECT_TRUE(contains(rows, "<span class=\"tone warn\">missing</span>")) << rows;  // B's verdict
  EXPECT_FALSE(contains(rows, "nan")) << rows;
  for (const char* id : {"chart-tokens", "chart-memory", "chart-dt"})
    EXPECT_EQ(count(chart_of(page, id), ">missing</text>"), 2u) << id;
}

TEST(HtmlReport, ForcedDifferencesAreAVisibleWarning) {
  json cmp = load_fixture();
  cmp["forced_differences"] = {"rung 'fp32': config.batch is 8 in A (runs/a100) but 16 in B (runs/h100)"};
  const std::string page = page_of(cmp);
  EXPECT_TRUE(contains(page, "class=\"forced\""));
  EXPECT_TRUE(contains(page, "config.batch is 8 in A"));
}

TEST(HtmlReport, EscapesStringsFromTheJson) {
  json cmp = load_fixture();
  cmp["inputs"][1]["path"] = "runs/<script>alert(1)</script>";
  cmp["inputs"][1]["label"] = "B&<b>";
  cmp["rungs"][0]["rung"] = "fp32\"><script>alert(2)</script>";
  cmp["warnings"] = {"<img src=x onerror=alert(3)>"};
  const std::string page = page_of(cmp);
  EXPECT_FALSE(contains(page, "<script>alert"));
  EXPECT_FALSE(contains(page, "<img"));
  EXPECT_FALSE(contains(page, "B&<b>"));
  EXPECT_TRUE(contains(page, "runs/&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_TRUE(contains(page, "B&amp;&lt;b&gt;"));
}

TEST(HtmlReport, SurvivesNullsAndAbsentFields) {
  json cmp = load_fixture();
  for (auto& rung : cmp["rungs"])
    for (auto& in : rung["inputs"])
      for (const char* key : {"dt_ms_median", "mfu_pct", "peak_bytes", "speedup_vs_fp32"}) in[key] = nullptr;
  cmp["rungs"][0]["inputs"][1].erase("dt_ms_samples");
  cmp["rungs"][1]["vs_baseline"][1]["p_value"] = nullptr;
  cmp["geomean"] = nullptr;
  cmp.erase("alpha");
  std::string page;
  ASSERT_NO_THROW(page = page_of(cmp));
  EXPECT_TRUE(contains(page, "id=\"chart-dt\""));
  EXPECT_TRUE(contains(chart_of(page, "chart-memory"), "no peak GiB in these inputs"));
  EXPECT_NO_THROW(page_of(json::object()));
  EXPECT_NO_THROW(page_of(json()));
  EXPECT_NO_THROW(page_of(json::array({1, 2})));
  const json odd = {{"inputs", {{{"label", 1}, {"environment", "not an object"}}}},
                    {"subject", "not an object"},
                    {"warnings", {nullptr, 3}},
                    {"geomean", {nullptr, "x"}},
                    {"ladder_shape", {{{"rung", 2}, {"speedup_vs_fp32", "x"}}}},
                    {"rungs",
                     {{{"rung", "fp32"}, {"inputs", "not an array"}},
                      {{"rung", "bf16"}, {"inputs", {nullptr, 7}}, {"vs_baseline", {nullptr, "x"}}}}}};
  ASSERT_NO_THROW(page = page_of(odd));
  EXPECT_TRUE(contains(page, "input 0")) << "a label that is not a string";
  EXPECT_TRUE(contains(page, "<code>\u2013</code>")) << "an absent path shows as a dash";
}

// What a page shows is what every format was given: the model is not read.
TEST(HtmlReport, ReadsOnlyTheDocumentNotItsModel) {
  Document doc = comparison_document(comparison_from_json(load_fixture()));
  const std::string page = render_html(doc);
  doc.data = {{"inputs", "something else entirely"}};
  EXPECT_EQ(render_html(doc), page);
}

json summary_row(const char* rung, double tokens_per_s, double peak_bytes, double speedup) {
  return {{"cell", rung},
          {"rung", rung},
          {"status", "ok"},
          {"dt_ms_median", 1e6 / tokens_per_s},
          {"tokens_per_s_median", tokens_per_s},
          {"peak_bytes", peak_bytes},
          {"mfu_pct", 10.0},
          {"speedup_vs_fp32", speedup},
          {"speedup_vs_previous", nullptr},
          {"parity", {{"status", "baseline"}}}};
}

TEST(HtmlReport, ARunDocumentHasItsTableAndCharts) {
  const json summary = {{"run_id", "20261124T100000Z-7"},
                        {"status", "partial"},
                        {"rows",
                         {summary_row("fp32", 1000, 1 << 30, 1.0),
                          summary_row("flash", 1500, 1 << 29, 1.5),
                          {{"cell", "bf16"}, {"rung", "bf16"}, {"status", "failed"}, {"reason", "oom"}}}}};
  const std::string page = render_html(summary_document(summary, "runs/x/summary.json"));
  EXPECT_TRUE(contains(page, "<h1>ladder run: 20261124T100000Z-7</h1>"));
  EXPECT_EQ(count(chart_of(page, "chart-tokens"), "<rect class=\"mark\""), 2u);
  EXPECT_TRUE(contains(chart_of(page, "chart-tokens"), "20261124T100000Z-7 \u00b7 flash: 1.50k tok/s"));
  EXPECT_TRUE(contains(chart_of(page, "chart-tokens"), ">failed</text>")) << "bf16 did not run";
  EXPECT_EQ(count(chart_of(page, "chart-memory"), "<rect class=\"mark\""), 2u);
  EXPECT_TRUE(contains(chart_of(page, "chart-speedup"), "flash: 1.50\u00d7"));
  EXPECT_TRUE(contains(page, "<table class=\"doc\">")) << "the run table";
  EXPECT_TRUE(contains(page, "<td class=\"num\">1.50</td>")) << "flash's x fp32";
  EXPECT_TRUE(contains(page, "summary: runs/x/summary.json")) << "the notes";
  write_for_a_look("run.html", page);
}

TEST(HtmlReport, AnIntervalDrawsAWhisker) {
  Chart bars;
  bars.id = "chart-bars";
  bars.unit = "tokens/s";
  bars.y_covers = {0};
  bars.categories = {"fp32", "bf16"};
  ChartPoint with, without;
  with.value = 16384;
  with.interval = Interval{16000, 16800};
  without.value = 20000;
  bars.series = {{"A", {with, without}}};
  Chart lines = bars;
  lines.id = "chart-lines";
  lines.kind = ChartKind::kLines;
  Document doc;
  doc.charts = {bars, lines};
  const std::string page = render_html(doc);
  for (const char* id : {"chart-bars", "chart-lines"}) {
    const std::string svg = chart_of(page, id);
    EXPECT_EQ(count(svg, "class=\"whisker interval\""), 3u) << id << ": one stem and two caps, for one point";
    EXPECT_TRUE(contains(svg, "A \u00b7 fp32: 16.4k tokens/s (interval 16.0k\u201316.8k tokens/s)")) << svg;
    EXPECT_TRUE(contains(svg, "A \u00b7 bf16: 20.0k tokens/s</title>")) << svg;
  }
  // The whisker spans lo..hi on the chart's scale: from below the bar's top to above it.
  const std::string svg = chart_of(page, "chart-bars");
  const size_t at = svg.find("class=\"whisker interval\"");
  const auto attr = [&](const char* name) {
    const size_t v = svg.find(std::string(name) + "=\"", at) + std::string(name).size() + 2;
    return std::stod(svg.substr(v, svg.find('"', v) - v));
  };
  const size_t bar = svg.find("<rect class=\"mark\"");
  const size_t top_at = svg.find("y=\"", bar) + 3;
  const double bar_top = std::stod(svg.substr(top_at, svg.find('"', top_at) - top_at));
  EXPECT_GT(attr("y1"), bar_top);  // lo, below the top (y grows downwards)
  EXPECT_LT(attr("y2"), bar_top);  // hi, above it
}

}  // namespace
}  // namespace ladder
