// tests/variants/test_config_fields.cpp: what is derived from the config-field table
// (variants/config_fields.h), checked for every declared field: JSON round
// trips, validate_config()'s bounds and messages, the matrix file's keys, the CLI's
// options (accepted, listed in --help, out-of-bounds values exit 2 naming the
// option).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tuple>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/run/matrix.h"
#include "tests/support/run_ladder.h"
#include "variants/config/config.h"
#include "variants/config_fields.h"

namespace ladder {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

RunConfig tiny() { return config_for("tiny", Overrides{}, "cpu"); }

// A value of `f` within its bounds and unlike `now` (the field's value in tiny()).
FieldValue other_value(const ConfigField& f, const FieldValue& now) {
  const FieldBounds& b = f.bounds;
  switch (f.kind) {
    case FieldKind::kFlag: return !std::get<bool>(now);
    case FieldKind::kText:
      for (const auto& c : b.choices)
        if (c != std::get<std::string>(now)) return c;
      return f.is_path ? "/tmp/shards/*.bin" : "1,1,1";
    case FieldKind::kInt: return std::get<int64_t>(now) + 1;  // no integer field has an upper bound
    case FieldKind::kNumber: break;
  }
  if (std::holds_alternative<std::monostate>(now)) return b.lo.value_or(0) + 1.5;
  const double x = std::get<double>(now);
  if (b.hi) return (x + *b.hi) / 2;  // between the value and the bound
  return x * 2 + 1;
}

// A value just outside the bounds (nullopt: the field has none to break).
std::optional<FieldValue> out_of_bounds(const ConfigField& f) {
  const FieldBounds& b = f.bounds;
  if (f.kind == FieldKind::kText && !b.choices.empty()) return FieldValue(std::string("bogus"));
  if (f.kind == FieldKind::kInt && b.lo) return FieldValue(int64_t(*b.lo) - (b.lo_open ? 0 : 1));
  if (f.kind == FieldKind::kNumber && b.hi) return FieldValue(*b.hi + (b.hi_open ? 0.0 : 0.5));
  if (f.kind == FieldKind::kNumber && b.lo) return FieldValue(*b.lo - (b.lo_open ? 0.0 : 0.5));
  return std::nullopt;
}

std::string cli_text(const FieldValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return json(*d).dump();
  return std::get<std::string>(v);
}

TEST(ConfigFields, NamesOptionsAndJsonPathsAreUnique) {
  std::set<std::string> names, options, paths;
  for (const auto& f : config_fields()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_TRUE(paths.insert(f.json_path).second) << f.json_path;
    EXPECT_FALSE(f.help.empty()) << f.name;
    if (f.option.empty()) continue;
    EXPECT_EQ(f.option.rfind("--", 0), 0u) << f.option;
    EXPECT_TRUE(options.insert(f.option).second) << f.option;
    EXPECT_EQ(find_field_by_option(f.option), &f);
  }
  // Today's spellings: old reports and matrix files still load.
  for (const char* name : {"n_embd", "max_lr", "steps", "warmup", "seed", "threads", "total_batch", "cpu_bf16"})
    EXPECT_NE(find_field(name), nullptr) << name;
  EXPECT_EQ(find_field("max_lr")->option, "--lr");
  EXPECT_EQ(find_field("beta2")->json_path, "/train/betas/1");
}

TEST(ConfigFields, EveryFieldRoundTripsThroughJsonAtItsPath) {
  const RunConfig base = tiny();
  for (const auto& f : config_fields()) {
    RunConfig c = base;
    const FieldValue v = other_value(f, f.get(c));
    ASSERT_NO_THROW(check_field(f, v, f.name)) << f.name << " = " << value_text(v);
    f.set(c, v);
    const json j = c;
    ASSERT_TRUE(j.contains(json::json_pointer(f.json_path))) << f.name << " in " << j.dump();
    const RunConfig back = j.get<RunConfig>();
    EXPECT_EQ(value_text(f.get(back)), value_text(v)) << f.name;
    EXPECT_EQ(json(back), j) << f.name;
  }
}

// The report schema (not generated) describes each declared field at its
// JSON path, with its kind: a field added to the table without the schema fails here.
TEST(ConfigFields, TheReportSchemaDescribesEveryField) {
  const json schema = json::parse(std::ifstream(fs::path(LADDER_FIXTURES_DIR) / ".." / ".." / "reports" /
                                                "rung_report.schema.json"));
  auto has_type = [](const json& node, const char* t) {
    const json& type = node.value("type", json());
    return type == t || (type.is_array() && std::find(type.begin(), type.end(), t) != type.end());
  };
  for (const auto& f : config_fields()) {
    const json* node = &schema.at("properties").at("config");
    for (size_t start = 1; start <= f.json_path.size();) {
      const size_t end = std::min(f.json_path.find('/', start), f.json_path.size());
      const std::string token = f.json_path.substr(start, end - start);
      if (node->contains("items")) node = &node->at("items");  // betas/0
      else if (node->contains("properties") && node->at("properties").contains(token))
        node = &node->at("properties").at(token);
      else
        FAIL() << f.name << ": no '" << token << "' of " << f.json_path << " in the schema's config";
      start = end + 1;
    }
    if (!f.bounds.choices.empty()) {
      EXPECT_EQ(node->value("enum", json()), json(f.bounds.choices)) << f.name;
      continue;
    }
    const char* type = f.kind == FieldKind::kInt ? "integer" : f.kind == FieldKind::kNumber ? "number"
                       : f.kind == FieldKind::kText ? "string" : "boolean";
    EXPECT_TRUE(has_type(*node, type)) << f.name << " is " << type << ": " << node->dump();
    if (f.empty_is_null || std::holds_alternative<std::monostate>(f.get(RunConfig{}))) {
      EXPECT_TRUE(has_type(*node, "null")) << f.name << " may be null: " << node->dump();
    }
  }
}

TEST(ConfigFields, AbsentFieldsReadAsOlderConfigsMeantThem) {
  const json j = tiny();
  for (const auto& f : config_fields()) {
    if (f.name == "beta1") continue;  // erasing betas[0] would shift beta2 into its place
    json old = j;
    const json::json_pointer ptr(f.json_path);
    json& parent = old.at(ptr.parent_pointer());
    if (parent.is_array()) parent.erase(std::stoul(ptr.back()));
    else parent.erase(ptr.back());
    if (!f.if_absent) {
      EXPECT_THROW(old.get<RunConfig>(), json::out_of_range) << f.name << " is required";
      continue;
    }
    const RunConfig c = old.get<RunConfig>();
    if (f.name == "cpu_bf16") EXPECT_EQ(c.cpu_bf16, "on");  // before --cpu-bf16, bf16 ran as asked
    else if (f.name == "warmup_max") EXPECT_EQ(c.warmup_max, c.warmup);  // before warm-up until stable: fixed
    else if (f.name == "gemm_plan") EXPECT_EQ(c.gemm_plan, "lt");  // before the planner: cuBLASLt's first algorithm
    else if (f.name == "layer_norm_kernel") EXPECT_EQ(c.layer_norm_kernel, "row");  // before the vector kernels
    else if (f.name == "cross_entropy_kernel") EXPECT_EQ(c.cross_entropy_kernel, "online");  // before batched
    else if (f.name == "attention_plan") EXPECT_EQ(c.attention_plan, "pytorch");  // before the planner: SDPA's pick
    else EXPECT_EQ(value_text(f.get(c)), value_text(f.get(RunConfig{}))) << f.name;
  }
}

TEST(ConfigFields, ValidateChecksEachFieldsBoundsNamingTheOption) {
  for (const auto& f : config_fields()) {
    const auto bad = out_of_bounds(f);
    if (!bad) continue;
    RunConfig c = tiny();
    f.set(c, *bad);
    try {
      validate_config(c);
      ADD_FAILURE() << f.name << " = " << value_text(*bad) << " passed validate_config()";
    } catch (const ConfigError& e) {
      const std::string expected = field_label(f) + ": got " + value_text(*bad) + ", expected " + expected_text(f);
      EXPECT_EQ(std::string(e.what()), expected);
    }
  }
  EXPECT_EQ(expected_text(*find_field("batch")), "an integer > 0");
  EXPECT_EQ(expected_text(*find_field("min_lr_ratio")), "a number in [0, 1]");
  EXPECT_EQ(expected_text(*find_field("cpu_bf16")), "one of: auto, on, off");
}

TEST(ConfigFields, SettingsApplyInTableOrder) {
  FieldSettings s;
  s.set("warmup", int64_t(3));  // alone: a fixed warmup
  RunConfig c = tiny();
  s.apply(c);
  EXPECT_EQ(c.warmup, 3);
  EXPECT_EQ(c.warmup_max, 3);
  s.set("warmup_max", int64_t(9));
  s.apply(c);
  EXPECT_EQ(c.warmup_max, 9);
  FieldSettings file;
  file.set("warmup", int64_t(1));
  file.set("steps", int64_t(7));
  s.fill_missing_from(file);  // the CLI's warmup wins; the file's steps fill in
  EXPECT_EQ(s.get<int64_t>("warmup").value_or(-1), 3);
  EXPECT_EQ(s.get<int64_t>("steps").value_or(-1), 7);
  EXPECT_THROW(s.set("no_such_field", int64_t(1)), std::logic_error);
}

class MatrixFile : public ::testing::Test {
 protected:
  std::string write(const json& j) {
    std::ofstream(path_) << j.dump();
    return path_;
  }
  void TearDown() override { std::filesystem::remove(path_); }
  // One file per process and test: ctest runs tests in parallel, and other
  // checkouts' suites may run beside this one on the same machine.
  std::string path_ = ::testing::TempDir() + "ladder_config_fields_matrix_" + std::to_string(::getpid()) + "_" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
};

TEST_F(MatrixFile, EveryFieldIsAKey) {
  json j = {{"presets", {"tiny"}}};
  const RunConfig base = tiny();
  for (const auto& f : config_fields()) {
    if (f.name == "batch" || f.name == "seq") continue;  // matrix axes: lists, tested in test_rungs
    const FieldValue v = other_value(f, f.get(base));
    json value;
    std::visit([&](const auto& x) {
      if constexpr (!std::is_same_v<std::decay_t<decltype(x)>, std::monostate>) value = x;
    }, v);
    j[f.name] = value;
  }
  MatrixSpec spec;
  read_matrix_file(write(j), spec);
  for (const auto& f : config_fields()) {
    if (f.name == "batch" || f.name == "seq") continue;
    const FieldValue* got = spec.overrides.fields.find(f.name);
    ASSERT_NE(got, nullptr) << f.name;
    EXPECT_EQ(value_text(*got), value_text(other_value(f, f.get(base)))) << f.name;
  }
}

TEST_F(MatrixFile, UnknownKeysWrongTypesAndBoundsNameTheFileAndKey) {
  MatrixSpec spec;
  try {
    read_matrix_file(write({{"n_embed", 64}}), spec);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    for (const char* part : {path_.c_str(), "unknown key 'n_embed'", "presets", "n_embd", "max_lr", "cpu_bf16"})
      EXPECT_NE(m.find(part), std::string::npos) << part << " in " << m;
  }
  for (const auto& [key, value, part] : {std::tuple<const char*, json, const char*>{"max_lr", "big", "a number > 0"},
                                         {"steps", 0, "an integer > 0"},
                                         {"steps", 2.5, "an integer > 0"},
                                         {"cpu_bf16", "maybe", "one of: auto, on, off"},
                                         {"breakdown", 1, "true or false"}}) {
    try {
      read_matrix_file(write({{key, value}}), spec);
      ADD_FAILURE() << key << " = " << value.dump() << " was accepted";
    } catch (const ConfigError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(path_ + ": key '" + key + "': got "), std::string::npos) << m;
      EXPECT_NE(m.find(part), std::string::npos) << m;
    }
  }
}

// The CLI: one option per declared field.
TEST(ConfigFieldsCli, HelpListsEveryOptionAndMeasureAcceptsThemAll) {
  const test::Result help = test::run_ladder("measure --help");
  ASSERT_EQ(help.exit_code, 0) << help.output;
  std::string args;
  const RunConfig base = tiny();
  for (const auto& f : config_fields()) {
    if (f.option.empty()) continue;
    EXPECT_NE(help.output.find(f.option + (f.kind == FieldKind::kFlag ? " " : " " + f.metavar)), std::string::npos)
        << f.option;
    args += " " + f.option;
    if (f.kind != FieldKind::kFlag) args += " '" + cli_text(other_value(f, f.get(base))) + "'";
  }
  // Every option parses; then the missing --config file stops it, exit 2.
  const std::string missing = (fs::temp_directory_path() / "ladder_no_such_config.json").string();
  const test::Result r = test::run_ladder("measure" + args + " --config " + missing);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--config: cannot read '" + missing + "'"), std::string::npos) << args << "\n" << r.output;
}

TEST(ConfigFieldsCli, AnOutOfBoundsValueExitsTwoNamingTheOption) {
  for (const auto& f : config_fields()) {
    const auto bad = out_of_bounds(f);
    if (f.option.empty() || !bad) continue;
    const test::Result r = test::run_ladder("run --device cpu --preset tiny " + f.option + " " + cli_text(*bad));
    EXPECT_EQ(r.exit_code, 2) << f.option << "\n" << r.output;
    const std::string expected = f.option + ": got " + value_text(*bad) + ", expected " + expected_text(f);
    EXPECT_NE(r.output.find(expected), std::string::npos) << expected << "\n" << r.output;
  }
}

}  // namespace
}  // namespace ladder
