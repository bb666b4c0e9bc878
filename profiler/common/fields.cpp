// profiler/common/fields.cpp: see fields.h.
#include "profiler/common/fields.h"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

namespace ladder::fields::detail {

std::string shown(const nlohmann::json& v) {
  std::string text = v.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

void fail(const std::string& path, const std::string& got, const std::string& expected) {
  throw ConfigError(fmt::format("{}: is {}, expected {}", path, got, expected));
}

void check_value(const std::string& path, const nlohmann::json& j, const Doc& doc) {
  if (!doc.values.empty() && std::find(doc.values.begin(), doc.values.end(), j) == doc.values.end()) {
    std::string allowed;
    for (const auto& v : doc.values) allowed += (allowed.empty() ? "" : ", ") + v.dump();
    fail(path, shown(j), "one of " + allowed);
  }
  if (j.is_number()) {
    const double x = j.get<double>();
    if (doc.minimum && !(x >= *doc.minimum)) fail(path, shown(j), fmt::format("a number >= {}", *doc.minimum));
    if (doc.exclusive_minimum && !(x > *doc.exclusive_minimum))
      fail(path, shown(j), fmt::format("a number > {}", *doc.exclusive_minimum));
  }
  if (!doc.pattern.empty() && j.is_string() && !std::regex_search(j.get<std::string>(), std::regex(doc.pattern)))
    fail(path, shown(j), fmt::format("a string matching {}", doc.pattern));
}

void add_constraints(nlohmann::json& schema, const Doc& doc) {
  if (!doc.values.empty()) schema["enum"] = doc.values;
  if (doc.minimum) schema["minimum"] = *doc.minimum;
  if (doc.exclusive_minimum) schema["exclusiveMinimum"] = *doc.exclusive_minimum;
  if (!doc.pattern.empty()) schema["pattern"] = doc.pattern;
  if (!doc.format.empty()) schema["format"] = doc.format;
}

nlohmann::json nullable(nlohmann::json schema) {
  if (schema.contains("enum")) schema["enum"].push_back(nullptr);
  if (schema.contains("type") && schema["type"].is_string()) {
    schema["type"] = {schema["type"], "null"};
    return schema;
  }
  return {{"anyOf", {schema, {{"type", "null"}}}}};
}

}  // namespace ladder::fields::detail
