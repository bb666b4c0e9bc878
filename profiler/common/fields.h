// profiler/common/fields.h: a struct that lists its fields once gets its JSON,
// its reading back and its JSON Schema from that one list.
//
//   struct Flops {
//     int64_t flops_per_token = 0;
//     std::string formula;
//     template <class S, class V> static void fields(S& s, V& v) {
//       v("flops_per_token", s.flops_per_token, Doc("the model's FLOPs per token").min(1));
//       v("formula", s.formula);
//     }
//   };
//
//   nlohmann::json j = fields::to_json(flops);
//   Flops f = fields::from_json<Flops>(j, "report.json: flops");
//   nlohmann::json schema = fields::schema_of<Flops>();
//
// A member's C++ type says its JSON type: bool, an integer, a floating-point
// number, std::string, std::vector<T> (an array of T), std::map<std::string,
// T> (an object of T), another struct with fields() (an object: every field
// required, no other key allowed), nlohmann::json (any value, whose
// schema Doc::schema gives by hand), or another class with nlohmann's
// to_json and from_json of its own (an object, read by its from_json, whose
// schema Doc::schema gives: a RunConfig, by its field table; the step
// columns, by the step metrics). Its errors are put under the field's path,
// and one that names a relative path (".loss[3]: ...") continues it.
// std::optional<T> may be null, and is written as null when empty;
// Maybe<T> may be absent, and is left out when empty; Inline<T> is a struct
// whose fields sit in the enclosing object beside its own, present or
// absent together (the name it is listed under is not written). Doc says
// what the type cannot: a description, the values allowed, a minimum, a
// pattern, a format. Its constraints apply to the values: to an
// array's items and a map's values, the description to the field itself.
//
// Reading is strict: a missing required field, a wrong type or a value the
// Doc does not allow throws ConfigError naming the path of the field, what it
// holds and what was expected. Older reports are upgraded before they are
// read (reports/model/report/report_loader.cpp), not read leniently here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/common/config_error.h"

namespace ladder::fields {

// A field that may be absent: left out of the JSON when empty.
template <class T>
struct Maybe : std::optional<T> {
  template <class U>
  static constexpr bool kValue = !std::is_same_v<std::decay_t<U>, Maybe> && std::is_constructible_v<T, U&&>;
  Maybe() = default;
  Maybe(std::nullopt_t) {}  // NOLINT: as std::optional
  template <class U, std::enable_if_t<kValue<U>, int> = 0>
  Maybe(U&& v) : std::optional<T>(T(std::forward<U>(v))) {}  // NOLINT: as std::optional
  template <class U, std::enable_if_t<kValue<U>, int> = 0>
  Maybe& operator=(U&& v) {
    std::optional<T>::operator=(T(std::forward<U>(v)));
    return *this;
  }
  Maybe& operator=(std::nullopt_t) {
    this->reset();
    return *this;
  }
  Maybe(const std::optional<T>& o) : std::optional<T>(o) {}  // NOLINT: empty stays empty
  Maybe& operator=(const std::optional<T>& o) {
    std::optional<T>::operator=(o);
    return *this;
  }
};

// A struct's fields written inline, in the enclosing object: all of them, or
// none (empty). Read as present where any of its fields is there; listed in
// the enclosing schema as optional (its schema_extra may require them).
template <class T>
struct Inline : std::optional<T> {
  using std::optional<T>::optional;
  using std::optional<T>::operator=;
};

// Names as the values a Doc allows (Doc::one_of).
inline std::vector<nlohmann::json> values_of(const std::vector<std::string>& names) {
  return {names.begin(), names.end()};
}

// What a field's schema says beyond its C++ type.
struct Doc {
  std::string description;
  std::vector<nlohmann::json> values;  // the values allowed (an enum)
  std::optional<double> minimum, exclusive_minimum;
  std::string pattern, format;
  nlohmann::json schema;  // a nlohmann::json member's schema, by hand; null: any value

  Doc() = default;
  Doc(const char* what) : description(what) {}  // NOLINT: a description reads as a Doc
  Doc&& one_of(std::vector<nlohmann::json> v) && { values = std::move(v); return std::move(*this); }
  Doc&& min(double m) && { minimum = m; return std::move(*this); }
  Doc&& above(double m) && { exclusive_minimum = m; return std::move(*this); }
  Doc&& matching(std::string p) && { pattern = std::move(p); return std::move(*this); }
  Doc&& as(std::string f) && { format = std::move(f); return std::move(*this); }
  Doc&& shaped(nlohmann::json s) && { schema = std::move(s); return std::move(*this); }
};

namespace detail {

struct NoVisit {
  template <class M>
  void operator()(const char*, M&, const Doc& = {}) {}
};

template <class T, class = void>
struct described : std::false_type {};
template <class T>
struct described<T, std::void_t<decltype(T::fields(std::declval<T&>(), std::declval<NoVisit&>()))>>
    : std::true_type {};

template <class T, class = void>
struct has_schema_extra : std::false_type {};
template <class T>
struct has_schema_extra<T, std::void_t<decltype(T::schema_extra(std::declval<nlohmann::json&>()))>>
    : std::true_type {};

template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};
template <class T> struct is_maybe : std::false_type {};
template <class T> struct is_maybe<Maybe<T>> : std::true_type {};
template <class T> struct is_inline : std::false_type {};
template <class T> struct is_inline<Inline<T>> : std::true_type {};
template <class T> struct is_vector : std::false_type {};
template <class T> struct is_vector<std::vector<T>> : std::true_type {};
template <class T> struct is_map : std::false_type {};
template <class T> struct is_map<std::map<std::string, T>> : std::true_type {};
// A class that is none of the above: it converts itself (nlohmann's to_json
// and from_json, found by argument-dependent lookup).
template <class T>
struct own_json : std::bool_constant<std::is_class_v<T> && !std::is_same_v<T, std::string> &&
                                     !std::is_same_v<T, nlohmann::json> && !described<T>::value> {};

// Throws ConfigError: "<path>: is <got>, expected <expected>".
[[noreturn]] void fail(const std::string& path, const std::string& got, const std::string& expected);
// A value as an error shows it: its JSON, cut short.
std::string shown(const nlohmann::json& v);
void check_value(const std::string& path, const nlohmann::json& j, const Doc& doc);
// The value constraints of `doc` added to a scalar's schema.
void add_constraints(nlohmann::json& schema, const Doc& doc);
// `schema` that also admits null.
nlohmann::json nullable(nlohmann::json schema);

// A default T for the visitors that only name T's members (the names, the
// schema): one per type, never read or changed.
template <class T>
T& probe() {
  static T p;  // static storage: zeroed, then default-constructed
  return p;
}

// The JSON names a struct's fields take, an Inline member's own included.
struct FieldNames {
  std::vector<std::string>& names;
  template <class M>
  void operator()(const char* name, M&, const Doc& = {}) {
    if constexpr (is_inline<M>::value) {
      M::value_type::fields(probe<typename M::value_type>(), *this);
    } else {
      names.emplace_back(name);
    }
  }
};

template <class T>
const std::vector<std::string>& field_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    FieldNames visit{names};
    T::fields(probe<T>(), visit);
    return names;
  }();
  return kNames;
}

template <class T>
nlohmann::json write(const T& v);

template <class T>
struct Writer {
  nlohmann::json& out;
  template <class M>
  void operator()(const char* name, const M& m, const Doc& = {}) {
    if constexpr (is_maybe<M>::value) {
      if (m) out[name] = write(*m);
    } else if constexpr (is_inline<M>::value) {
      if (m) {
        nlohmann::json own = write(*m);
        for (auto& [k, x] : own.items()) out[k] = std::move(x);
      }
    } else {
      out[name] = write(m);
    }
  }
};

template <class T>
nlohmann::json write(const T& v) {
  if constexpr (is_optional<T>::value || is_maybe<T>::value) {
    return v ? write(*v) : nlohmann::json();
  } else if constexpr (is_vector<T>::value) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& x : v) a.push_back(write(x));
    return a;
  } else if constexpr (is_map<T>::value) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [k, x] : v) o[k] = write(x);
    return o;
  } else if constexpr (described<T>::value) {
    nlohmann::json o = nlohmann::json::object();
    Writer<T> w{o};
    T::fields(v, w);
    return o;
  } else {
    return nlohmann::json(v);
  }
}

template <class T>
void read(const nlohmann::json& j, T& out, const std::string& path, const Doc& doc);

template <class T>
struct Reader {
  const nlohmann::json& in;
  const std::string& path;
  template <class M>
  void operator()(const char* name, M& m, const Doc& doc = {}) {
    if constexpr (is_inline<M>::value) {
      using T2 = typename M::value_type;
      m.reset();
      for (const std::string& own : field_names<T2>())
        if (in.contains(own)) {
          T2 v{};
          Reader<T2> r{in, path};
          T2::fields(v, r);
          m = std::move(v);
          return;
        }
    } else {
      const std::string at = path + "." + name;
      const auto it = in.find(name);
      if (it == in.end()) {
        if constexpr (is_maybe<M>::value) {
          m.reset();
          return;
        } else {
          fail(at, "missing", "this field");
        }
      }
      read(*it, m, at, doc);
    }
  }
};

template <class T>
void read(const nlohmann::json& j, T& out, const std::string& path, const Doc& doc) {
  if constexpr (is_optional<T>::value || is_maybe<T>::value) {
    if (j.is_null() && is_optional<T>::value) {
      out.reset();  // a Maybe's null is its value's: an optional one's, else an error
    } else {
      typename T::value_type v{};
      read(j, v, path, doc);
      out = std::move(v);
    }
  } else if constexpr (is_vector<T>::value) {
    if (!j.is_array()) fail(path, shown(j), "an array");
    out.clear();
    for (size_t i = 0; i < j.size(); ++i) {
      typename T::value_type v{};
      read(j[i], v, path + "[" + std::to_string(i) + "]", doc);
      out.push_back(std::move(v));
    }
  } else if constexpr (is_map<T>::value) {
    if (!j.is_object()) fail(path, shown(j), "an object");
    out.clear();
    for (const auto& [k, x] : j.items()) read(x, out[k], path + "." + k, doc);
  } else if constexpr (described<T>::value) {
    if (!j.is_object()) fail(path, shown(j), "an object");
    Reader<T> r{j, path};
    T::fields(out, r);
    const std::vector<std::string>& names = field_names<T>();
    for (auto it = j.begin(); it != j.end(); ++it)
      if (std::find(names.begin(), names.end(), it.key()) == names.end())
        fail(path + "." + it.key(), shown(*it), "no such field (a newer report?)");
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    out = j;
  } else if constexpr (own_json<T>::value) {
    if (!j.is_object()) fail(path, shown(j), "an object");
    try {
      out = j.get<T>();
    } catch (const nlohmann::json::exception& e) {
      fail(path, shown(j), std::string("what its reader takes: ") + e.what());
    } catch (const ConfigError& e) {
      // A path of its own that is relative (".loss[3]") continues ours.
      const std::string what = e.what();
      throw ConfigError(path + (what.rfind('.', 0) == 0 ? "" : ": ") + what);
    }
  } else {
    if constexpr (std::is_same_v<T, bool>) {
      if (!j.is_boolean()) fail(path, shown(j), "true or false");
    } else if constexpr (std::is_integral_v<T>) {
      if (!j.is_number_integer()) fail(path, shown(j), "an integer");
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!j.is_number()) fail(path, shown(j), "a number");
    } else {
      if (!j.is_string()) fail(path, shown(j), "a string");
    }
    check_value(path, j, doc);
    out = j.get<T>();
  }
}

template <class T>
nlohmann::json schema(const Doc& doc);

template <class T>
struct SchemaWriter {
  nlohmann::json& properties;
  nlohmann::json& required;
  template <class M>
  void operator()(const char* name, M&, const Doc& doc = {}) {
    if constexpr (is_inline<M>::value) {
      nlohmann::json s = schema<typename M::value_type>(doc);
      for (auto& [k, x] : s["properties"].items()) properties[k] = std::move(x);
    } else {
      nlohmann::json s = schema<M>(doc);
      if (!doc.description.empty()) s["description"] = doc.description;
      properties[name] = std::move(s);
      if (!is_maybe<M>::value) required.push_back(name);
    }
  }
};

template <class T>
nlohmann::json schema(const Doc& doc) {
  if constexpr (is_optional<T>::value) {
    return nullable(schema<typename T::value_type>(doc));
  } else if constexpr (is_maybe<T>::value) {
    return schema<typename T::value_type>(doc);
  } else if constexpr (is_vector<T>::value) {
    return {{"type", "array"}, {"items", schema<typename T::value_type>(doc)}};
  } else if constexpr (is_map<T>::value) {
    return {{"type", "object"}, {"additionalProperties", schema<typename T::mapped_type>(doc)}};
  } else if constexpr (described<T>::value) {
    nlohmann::json properties = nlohmann::json::object(), required = nlohmann::json::array();
    SchemaWriter<T> w{properties, required};
    T::fields(probe<T>(), w);
    nlohmann::json s = {{"type", "object"}, {"properties", properties}, {"additionalProperties", false}};
    if (!required.empty()) s["required"] = required;
    if constexpr (has_schema_extra<T>::value) T::schema_extra(s);
    return s;
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    return doc.schema.is_null() ? nlohmann::json::object() : doc.schema;
  } else if constexpr (own_json<T>::value) {
    return doc.schema.is_null() ? nlohmann::json{{"type", "object"}} : doc.schema;
  } else {
    nlohmann::json s;
    if constexpr (std::is_same_v<T, bool>) s["type"] = "boolean";
    else if constexpr (std::is_integral_v<T>) s["type"] = "integer";
    else if constexpr (std::is_floating_point_v<T>) s["type"] = "number";
    else s["type"] = "string";
    add_constraints(s, doc);
    return s;
  }
}

}  // namespace detail

template <class T>
nlohmann::json to_json(const T& v) {
  return detail::write(v);
}

// `where` names the value in errors: "runs/x/fp32/report.json: timing".
template <class T>
T from_json(const nlohmann::json& j, const std::string& where) {
  T v{};
  detail::read(j, v, where, Doc{});
  return v;
}

// T's fields of `j`, an object whose other keys are someone else's (a ddp
// rank's figures: its facts beside a column per step metric): strict about
// T's fields, blind to the rest.
template <class T>
T from_json_part(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) detail::fail(where, detail::shown(j), "an object");
  nlohmann::json mine = nlohmann::json::object();
  for (const std::string& name : detail::field_names<T>())
    if (const auto it = j.find(name); it != j.end()) mine[name] = *it;
  return from_json<T>(mine, where);
}

template <class T>
nlohmann::json schema_of() {
  return detail::schema<T>(Doc{});
}

}  // namespace ladder::fields
