// reports/model/json_fields.h: reading a model (a saved comparison, a summary) defensively
// for a document: a field's value, or nothing when the field is absent, null
// or of another type, so that a malformed model renders as dashes and never
// throws. In a namespace of their own: `using namespace ladder::json_fields;`
// where they are read.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace ladder::json_fields {

inline constexpr const char* kDash = "\u2013";  // in place of an absent value

// obj[key], or null when obj is not an object or lacks the key (iterating null yields nothing).
inline const nlohmann::json& member(const nlohmann::json& obj, const std::string& key) {
  static const nlohmann::json kNull;
  if (!obj.is_object()) return kNull;
  const auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

// obj[key] when it is an array, else an empty array.
inline const nlohmann::json& array_at(const nlohmann::json& obj, const std::string& key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json& v = member(obj, key);
  return v.is_array() ? v : kEmpty;
}

// A value as a number: nothing for anything else (null, a string).
inline std::optional<double> as_number(const nlohmann::json& v) {
  return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
}

inline std::optional<double> number(const nlohmann::json& obj, const std::string& key) {
  return as_number(member(obj, key));
}

inline std::string text(const nlohmann::json& obj, const std::string& key, const std::string& fallback = kDash) {
  const nlohmann::json& v = member(obj, key);
  return v.is_string() ? v.get<std::string>() : fallback;
}

// An interval as the models write one, [lo, hi]; nothing for anything else.
inline std::optional<std::pair<double, double>> interval(const nlohmann::json& v) {
  if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number()) return std::nullopt;
  return std::make_pair(v[0].get<double>(), v[1].get<double>());
}

// Any value as people read it: a string as is, null as a dash, else its JSON.
inline std::string value_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.is_null() ? kDash : v.dump();
}

}  // namespace ladder::json_fields
