// tests/profiler/test_fields.cpp: a struct's one list of fields (profiler/common/fields.h)
// gives its JSON, its strict reading back and its JSON Schema, and the three
// agree.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "profiler/common/fields.h"

namespace ladder {
namespace {

using fields::Doc;
using fields::Maybe;
using nlohmann::json;

struct Inner {
  int64_t n = 0;
  std::optional<double> x;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("n", s.n, Doc("a count").min(0));
    v("x", s.x);
  }
};

struct Outer {
  std::string status;
  std::vector<double> dt_ms;
  std::map<std::string, Inner> parts;
  Maybe<std::string> message;
  std::optional<std::string> kind;
  bool ok = false;
  json anything;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("status", s.status, Doc("how it ended").one_of({"ok", "failed"}));
    v("dt_ms", s.dt_ms, Doc("per step").above(0));
    v("parts", s.parts);
    v("message", s.message);
    v("kind", s.kind, Doc().one_of({"a", "b"}));
    v("ok", s.ok);
    v("anything", s.anything, Doc().shaped({{"type", "object"}}));
  }
};

Outer sample() {
  Outer o;
  o.status = "ok";
  o.dt_ms = {1.5, 2.25};
  o.parts["p"] = Inner{3, 0.5};
  o.parts["q"] = Inner{4, std::nullopt};
  o.ok = true;
  o.anything = {{"free", 1}};
  return o;
}

TEST(Fields, WritesEachKindAndReadsItBack) {
  const json j = fields::to_json(sample());
  EXPECT_EQ(j, json::parse(R"({"status": "ok", "dt_ms": [1.5, 2.25], "ok": true, "kind": null,
      "parts": {"p": {"n": 3, "x": 0.5}, "q": {"n": 4, "x": null}}, "anything": {"free": 1}})"));
  EXPECT_FALSE(j.contains("message"));  // Maybe: absent when empty, not null
  const Outer back = fields::from_json<Outer>(j, "r.json");
  EXPECT_EQ(fields::to_json(back), j);
  EXPECT_EQ(back.parts.at("p").n, 3);
  EXPECT_FALSE(back.parts.at("q").x.has_value());
  Outer with = sample();
  with.message = "boom";
  EXPECT_EQ(fields::to_json(with)["message"], "boom");
  EXPECT_EQ(*fields::from_json<Outer>(fields::to_json(with), "r.json").message, "boom");
}

std::string error_of(const json& j) {
  try {
    fields::from_json<Outer>(j, "r.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Fields, ReadingNamesThePathWhatItHoldsAndWhatWasExpected) {
  json j = fields::to_json(sample());
  json missing = j;
  missing.erase("status");
  EXPECT_EQ(error_of(missing), "r.json.status: is missing, expected this field");
  json wrong = j;
  wrong["parts"]["q"]["n"] = "four";
  EXPECT_EQ(error_of(wrong), "r.json.parts.q.n: is \"four\", expected an integer");
  json negative = j;
  negative["parts"]["p"]["n"] = -1;
  EXPECT_EQ(error_of(negative), "r.json.parts.p.n: is -1, expected a number >= 0");
  json zero_dt = j;
  zero_dt["dt_ms"][1] = 0.0;
  EXPECT_EQ(error_of(zero_dt), "r.json.dt_ms[1]: is 0.0, expected a number > 0");
  json unknown = j;
  unknown["extra"] = 1;
  EXPECT_EQ(error_of(unknown), "r.json.extra: is 1, expected no such field (a newer report?)");
  json bad_enum = j;
  bad_enum["status"] = "fine";
  EXPECT_EQ(error_of(bad_enum), "r.json.status: is \"fine\", expected one of \"ok\", \"failed\"");
  json null_kind = j;
  null_kind["kind"] = "c";
  EXPECT_EQ(error_of(null_kind), "r.json.kind: is \"c\", expected one of \"a\", \"b\"");
}

// A struct's part of an object whose other keys are someone else's (a ddp
// rank's facts beside its step columns): the others are left alone, its own
// read as strictly as ever.
TEST(Fields, APartReadsItsOwnFieldsStrictlyAndLeavesTheRest) {
  json j = {{"n", 2}, {"x", nullptr}, {"dt_ms", {1.0, 2.0}}, {"tokens_per_s", {3.0}}};
  const Inner in = fields::from_json_part<Inner>(j, "ddp.per_rank[0]");
  EXPECT_EQ(in.n, 2);
  EXPECT_FALSE(in.x.has_value());
  EXPECT_THROW(fields::from_json<Inner>(j, "ddp.per_rank[0]"), ConfigError);  // whole, the columns are unknown
  j["n"] = "two";
  try {
    fields::from_json_part<Inner>(j, "ddp.per_rank[0]");
    ADD_FAILURE() << "a wrong type was read";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "ddp.per_rank[0].n: is \"two\", expected an integer");
  }
  j.erase("n");
  EXPECT_THROW(fields::from_json_part<Inner>(j, "p"), ConfigError);  // its own required field
  EXPECT_THROW(fields::from_json_part<Inner>(json::array(), "p"), ConfigError);
}

TEST(Fields, SchemaFollowsTheFields) {
  const json s = fields::schema_of<Outer>();
  EXPECT_EQ(s["type"], "object");
  EXPECT_EQ(s["additionalProperties"], false);
  // Every field but the Maybe one is required, in declaration order.
  EXPECT_EQ(s["required"], json({"status", "dt_ms", "parts", "kind", "ok", "anything"}));
  const json& p = s["properties"];
  EXPECT_EQ(p.size(), 7u);
  EXPECT_EQ(p["status"], json::parse(R"({"type": "string", "enum": ["ok", "failed"], "description": "how it ended"})"));
  // Constraints apply to the items; the description to the field.
  EXPECT_EQ(p["dt_ms"], json::parse(R"({"type": "array", "items": {"type": "number", "exclusiveMinimum": 0.0},
      "description": "per step"})"));
  EXPECT_EQ(p["kind"], json::parse(R"({"type": ["string", "null"], "enum": ["a", "b", null]})"));
  EXPECT_EQ(p["parts"]["additionalProperties"]["properties"]["x"]["type"], json({"number", "null"}));
  EXPECT_EQ(p["parts"]["additionalProperties"]["properties"]["n"]["minimum"], 0.0);
  EXPECT_EQ(p["parts"]["additionalProperties"]["required"], json({"n", "x"}));
  EXPECT_EQ(p["anything"], json({{"type", "object"}}));
  EXPECT_EQ(p["message"], json({{"type", "string"}}));
}

}  // namespace
}  // namespace ladder
