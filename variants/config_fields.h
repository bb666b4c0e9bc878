// variants/config_fields.h: one declaration per RunConfig field.
//
// A field is declared once, in config_fields.cpp: its CLI option (--n-embd),
// its name (n_embd: the JSON key in the config's `model` object and the
// matrix-file key), where it lives in RunConfig, its kind, its bounds and one
// line of help. From the table come:
//   - the options of `ladder run` and `ladder measure` (bench/run/run_command.cpp),
//   - FieldSettings, the values a user set (CLI or matrix file), applied to a
//     preset's RunConfig (bench/run/matrix.h: Overrides),
//   - the matrix file's field keys (bench/run/matrix.cpp),
//   - validate_config()'s per-field bounds and their messages,
//   - RunConfig's to/from JSON for these fields.
// Adding a field: one entry in config_fields.cpp and its member in config.h.
//
// Not in the table: preset, rung and switches (resolved from names), device
// (resolved against the machine), world_size and the rank fields (set by the
// launcher), and the derived micro_steps / model_vocab.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "variants/config/config.h"

namespace ladder {

// Which part of the config a field belongs to: its JSON object ("run" fields
// are top-level keys).
enum class FieldGroup { kModel, kTrain, kDdp, kData, kRun };
const char* group_name(FieldGroup g);

enum class FieldKind {
  kInt,     // int64_t, int or uint64_t
  kNumber,  // double or std::optional<double> (unset: monostate)
  kText,    // std::string
  kFlag,    // bool; on the CLI an option without a value
};

// A field's value, whatever its C++ type. monostate: an unset optional.
using FieldValue = std::variant<std::monostate, bool, int64_t, double, std::string>;

// What a value must be: a closed or open interval for numbers, a list of
// choices for text. Empty: anything of the field's kind.
struct FieldBounds {
  std::optional<double> lo, hi;
  bool lo_open = false, hi_open = false;
  std::vector<std::string> choices;
};

struct ConfigField {
  std::string name;    // JSON key in its group's object, and matrix-file key: "n_embd"
  std::string option;  // CLI option: "--n-embd"; "" = not on the CLI (JSON and matrix file only)
  FieldGroup group;
  FieldKind kind;
  std::string metavar;  // CLI placeholder: "C" (none for flags)
  std::string help;     // one line for --help
  FieldBounds bounds;
  std::string json_path;     // JSON pointer into the config: "/model/n_embd"
  bool flag_value = true;    // kFlag: what the CLI flag sets (--no-prefetch sets false)
  bool empty_is_null = false;  // kText: "" is written as JSON null (and null read as "")
  bool is_path = false;        // kText: user input must be non-empty and is made absolute
  bool show_default = true;  // --help appends RunConfig{}'s value
  // Access to the RunConfig member, made by the table from one accessor.
  std::function<FieldValue(const RunConfig&)> get;
  std::function<void(RunConfig&, const FieldValue&)> set;
  // A config without this field (written by an older ladder): what to do.
  // nullptr: it is required (reading throws).
  void (*if_absent)(RunConfig&) = nullptr;
  // Run after set (CLI, matrix file, JSON): fields it also sets. --warmup N
  // alone is a fixed warmup, so it also sets warmup_max.
  void (*after_set)(RunConfig&) = nullptr;
};

// The field's name in messages: its option, or its name when it has none.
inline const std::string& field_label(const ConfigField& f) { return f.option.empty() ? f.name : f.option; }

// Every declared field, in the order of --help and of applying settings.
const std::vector<ConfigField>& config_fields();
// nullptr when no field has that name / option.
const ConfigField* find_field(const std::string& name);
const ConfigField* find_field_by_option(const std::string& option);

// What the field expects, for messages: "an integer > 0", "one of: auto, on, off".
std::string expected_text(const ConfigField& f);
// A value as a user would write it: 4, 0.5, 'auto', true, null.
std::string value_text(const FieldValue& v);
// Throws ConfigError "<where>: got <value>, expected <expected_text>" when the
// value is outside the field's bounds (or a number is not finite). `where`
// names the source: the option ("--batch") or a matrix file's key.
void check_field(const ConfigField& f, const FieldValue& v, const std::string& where);

// A run's configuration checked whole: each field's bounds, then what depends
// on several fields (the GEMM and attention plan requests among them).
// Throws ConfigError on the first invalid field. Beside the fields, not a
// member of RunConfig: the configuration (variants/config/) sits below the
// planners it would otherwise reach.
void validate_config(const RunConfig& cfg);
// A user's value (CLI, matrix file) checked against the bounds, a path made
// absolute (children may run elsewhere); throws ConfigError naming `where`.
FieldValue check_input(const ConfigField& f, FieldValue v, const std::string& where);
// A matrix file's JSON value as the field's kind, checked as check_input does;
// throws ConfigError naming `where` when the type is wrong.
FieldValue input_from_json(const ConfigField& f, const nlohmann::json& v, const std::string& where);

// The table's fields of a config's JSON form: write_fields sets each at its
// json_path; read_fields reads each (an absent field as its if_absent says,
// or json::out_of_range when it is required).
void write_fields(const RunConfig& c, nlohmann::json& j);
void read_fields(const nlohmann::json& j, RunConfig& c);

// The fields a user set (CLI options, matrix-file keys), by name; applied to
// a preset's RunConfig in table order.
class FieldSettings {
 public:
  // Throws std::logic_error for an undeclared name (a programming error).
  void set(const std::string& name, FieldValue v);
  const FieldValue* find(const std::string& name) const;
  template <class T>
  std::optional<T> get(const std::string& name) const {
    const FieldValue* v = find(name);
    if (!v) return std::nullopt;
    return std::get<T>(*v);
  }
  // Takes `lower`'s settings for fields not set here (the CLI wins over a file).
  void fill_missing_from(const FieldSettings& lower);
  void apply(RunConfig& c) const;
  bool empty() const { return values_.empty(); }

 private:
  std::map<std::string, FieldValue> values_;
};

}  // namespace ladder
