// tests/reports/test_table_output.cpp: the options the table commands share
// (profiler/common/cli.h: TableOutputOptions, one_input), and the two
// spellings each now has once: the base rung and the precisions.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profiler/common/cli.h"
#include "profiler/common/config_error.h"
#include "variants/config/precision_name.h"
#include "variants/config/rungs.h"

namespace {

using ladder::ArgParser;
using ladder::ConfigError;
using ladder::TableOutputOptions;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(TableOutput, FormatAndOutDefaultParseAndRefuseWhatIsNotListed) {
  ArgParser ap("demo", "a demo");
  const TableOutputOptions o(ap, {"text", "markdown", "json", "html"}, "(a note)");
  EXPECT_EQ(o.format, "text");
  EXPECT_EQ(o.out, "");
  EXPECT_NE(ap.usage().find("text (default), markdown (md), json or html (a note)"), std::string::npos)
      << ap.usage();
  ASSERT_TRUE(ap.parse({"--format", "md", "--out", "t.md"}));
  EXPECT_EQ(o.out, "t.md");
  EXPECT_TRUE(o.is("markdown"));
  EXPECT_FALSE(o.is("json"));
  EXPECT_EQ(error_of([&] { o.check("demo"); }), "");

  ArgParser bad("demo", "a demo");
  const TableOutputOptions b(bad, {"text", "markdown", "json"});
  ASSERT_TRUE(bad.parse({"--format=xml"}));
  EXPECT_EQ(error_of([&] { b.check("demo"); }), "demo: --format 'xml'; expected text, markdown (md) or json");
}

TEST(TableOutput, OneInputNamesTheCountAndWhatItWants) {
  EXPECT_EQ(ladder::one_input("demo", {"a"}, "RUN"), "a");
  EXPECT_EQ(error_of([] { ladder::one_input("demo", {}, "RUN directory"); }),
            "demo: got 0 inputs, expected exactly one RUN directory");
  EXPECT_EQ(error_of([] { ladder::one_input("demo", {"a", "b"}, "RUN"); }),
            "demo: got 2 inputs, expected exactly one RUN");
}

TEST(Spellings, TheBaseRungIsTheLaddersFirstAndThePrecisionsRoundTrip) {
  EXPECT_EQ(ladder::base_rung().name, ladder::kBaseRungName);
  EXPECT_EQ(&ladder::base_rung(), &ladder::ladder_rungs().front());
  EXPECT_EQ(ladder::parse_rung(ladder::kBaseRungName).name, ladder::kBaseRungName);
  EXPECT_EQ(ladder::precision_names().size(), 3u);
  for (const auto& name : ladder::precision_names()) {
    const auto p = ladder::parse_precision(name.get<std::string>());
    ASSERT_TRUE(p) << name;
    EXPECT_EQ(ladder::precision_name(*p), name.get<std::string>());
  }
  EXPECT_FALSE(ladder::parse_precision("fp16"));
  using ladder::Precision;
  EXPECT_EQ(ladder::matmul_precision(true, true), Precision::kBF16);
  EXPECT_EQ(ladder::matmul_precision(false, true), Precision::kTF32);
  EXPECT_EQ(ladder::matmul_precision(false, false), Precision::kFP32);
}

}  // namespace
