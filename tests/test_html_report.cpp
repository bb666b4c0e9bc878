// tests/test_html_report.cpp: the comparison page rendered from
// tests/fixtures/comparison.json has its five charts, names every input and
// the subject, shows missing rungs, escapes strings from the JSON and
// survives nulls. It is written to TempDir()/comparison.html for a look.
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/html_report.h"

namespace ladder {
namespace {

using nlohmann::json;

json load_fixture() {
  const std::string path = std::string(LADDER_FIXTURES_DIR) + "/comparison.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return json::parse(in);
}

bool contains(const std::string& page, const std::string& needle) { return page.find(needle) != std::string::npos; }

TEST(HtmlReport, FixtureHasAllFiveChartsAndIsWritten) {
  const std::string page = render_comparison_html(load_fixture());
  for (const char* id : {"chart-tokens", "chart-speedup", "chart-memory", "chart-dt", "chart-breakdown"})
    EXPECT_TRUE(contains(page, std::string("<svg class=\"chart\" id=\"") + id + "\"")) << id;
  EXPECT_TRUE(contains(page, "<!DOCTYPE html>"));
  EXPECT_FALSE(contains(page, "http://fonts") || contains(page, "<script src") || contains(page, "<link"))
      << "the page must not load anything from the network";
  const std::string out = ::testing::TempDir() + "comparison.html";
  std::ofstream(out) << page;
  EXPECT_TRUE(std::ifstream(out).good()) << out;
}

// Every <rect> of the breakdown chart with its category and height, in order.
std::vector<std::pair<std::string, double>> segments(const std::string& page) {
  std::vector<std::pair<std::string, double>> out;
  const std::string chart = page.substr(page.find("id=\"chart-breakdown\""));
  const std::string svg = chart.substr(0, chart.find("</svg>"));
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
  const auto segs = segments(render_comparison_html(cmp));
  ASSERT_EQ(segs.size(), 6u);  // zero-ms categories draw nothing
  EXPECT_EQ(segs[0].first, "gemm");  // the base of the stack
  EXPECT_EQ(segs[1].first, "elementwise_norm");
  EXPECT_EQ(segs[2].first, "softmax_loss");
  EXPECT_NEAR(segs[0].second / segs[1].second, 2.0, 0.02);  // 40 : 20 ms
  EXPECT_NEAR(segs[4].second / segs[1].second, 0.5, 0.02);  // B's elementwise band is half of A's
  EXPECT_NEAR(segs[3].second, segs[0].second, 0.01);        // the same GEMM time
  const std::string page = render_comparison_html(cmp);
  for (const char* label : {"GEMM", "attention", "elementwise/norm", "loss", "optimizer", "memcpy/memset",
                            "communication", "idle/other"})
    EXPECT_TRUE(contains(page, std::string(">") + label + "</text>")) << label;  // the legend
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
  const std::string page = render_comparison_html(cmp);
  const size_t at = page.find("<details class=\"breakdown-top\">");
  ASSERT_NE(at, std::string::npos);
  const std::string section = page.substr(at, page.find("</details>", at) - at);
  EXPECT_TRUE(contains(section, "<summary>" + cmp["rungs"][0]["rung"].get<std::string>() + "</summary>"));
  // Escaped, five rows per category and input, GEMM first as in the chart.
  EXPECT_TRUE(contains(section, "elementwise_kernel&lt;CUDAFunctor_add&lt;float&gt; &gt;#4"));
  EXPECT_FALSE(contains(section, "#5"));
  EXPECT_LT(section.find("nvjet_sm90_tst_256x128"), section.find("elementwise_kernel"));
  EXPECT_TRUE(contains(section, "<td>6.000</td><td>48.0</td>"));
  EXPECT_FALSE(contains(section, "data-category=\"communication\""));
  // A rung without names gets no collapsible table.
  EXPECT_EQ(page.find("<details class=\"breakdown-top\">", at + 1), std::string::npos);
  EXPECT_FALSE(contains(render_comparison_html(load_fixture()), "What makes up each band"));
}

TEST(HtmlReport, NamesEveryInputAndTheSubject) {
  const json cmp = load_fixture();
  const std::string page = render_comparison_html(cmp);
  for (const auto& in : cmp["inputs"]) {
    EXPECT_TRUE(contains(page, in["label"].get<std::string>()));
    EXPECT_TRUE(contains(page, in["path"].get<std::string>()));
    EXPECT_TRUE(contains(page, in["run_id"].get<std::string>()));
  }
  for (const auto& [key, values] : cmp["subject"].items()) {
    EXPECT_TRUE(contains(page, key)) << key;
    for (const auto& v : values) EXPECT_TRUE(contains(page, v.get<std::string>())) << v;
  }
  EXPECT_TRUE(contains(page, "rung &#39;ddp&#39;: missing in A, B")) << "the fixture's warning, escaped";
}

TEST(HtmlReport, MissingRungSaysMissingInItsTable) {
  const std::string page = render_comparison_html(load_fixture());
  const size_t table = page.find("<caption>ddp</caption>");
  ASSERT_NE(table, std::string::npos);
  const std::string rung = page.substr(table, page.find("</table>", table) - table);
  EXPECT_TRUE(contains(rung, ">missing<")) << rung;
  EXPECT_FALSE(contains(rung, "nan")) << rung;
}

TEST(HtmlReport, ForcedDifferencesAreAVisibleWarning) {
  json cmp = load_fixture();
  cmp["forced_differences"] = {"rung 'fp32': config.batch is 8 in A (runs/a100) but 16 in B (runs/h100)"};
  const std::string page = render_comparison_html(cmp);
  EXPECT_TRUE(contains(page, "class=\"forced\""));
  EXPECT_TRUE(contains(page, "config.batch is 8 in A"));
}

TEST(HtmlReport, EscapesStringsFromTheJson) {
  json cmp = load_fixture();
  cmp["inputs"][1]["path"] = "runs/<script>alert(1)</script>";
  cmp["inputs"][1]["label"] = "B&<b>";
  cmp["rungs"][0]["rung"] = "fp32\"><script>alert(2)</script>";
  const std::string page = render_comparison_html(cmp);
  EXPECT_FALSE(contains(page, "<script>alert"));
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
  std::string page;
  ASSERT_NO_THROW(page = render_comparison_html(cmp));
  EXPECT_TRUE(contains(page, "id=\"chart-dt\""));
  EXPECT_NO_THROW(render_comparison_html(json::object()));
  EXPECT_NO_THROW(render_comparison_html(json()));
  EXPECT_NO_THROW(render_comparison_html(json{{"inputs", {{{"label", 1}, {"environment", "not an object"}}}},
                                              {"subject", "not an object"},
                                              {"rungs", {{{"rung", "fp32"}, {"inputs", "not an array"}}}}}));
}

}  // namespace
}  // namespace ladder
