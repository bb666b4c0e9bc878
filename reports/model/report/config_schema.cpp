// reports/model/report/config_schema.cpp: see config_schema.h.
#include "reports/model/report/config_schema.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <variant>
#include <vector>

#include "variants/config_fields.h"

namespace ladder {

using nlohmann::json;

namespace {

json object_schema() {
  return {{"type", "object"}, {"properties", json::object()}, {"required", json::array()},
          {"additionalProperties", false}};
}

// A field's value: its kind, bounds and help.
json field_schema(const ConfigField& f) {
  json s;
  switch (f.kind) {
    case FieldKind::kInt: s["type"] = "integer"; break;
    case FieldKind::kNumber: s["type"] = "number"; break;
    case FieldKind::kText: s["type"] = "string"; break;
    case FieldKind::kFlag: s["type"] = "boolean"; break;
  }
  const FieldBounds& b = f.bounds;
  if (b.lo) s[b.lo_open ? "exclusiveMinimum" : "minimum"] = *b.lo;
  if (b.hi) s[b.hi_open ? "exclusiveMaximum" : "maximum"] = *b.hi;
  if (!b.choices.empty()) s["enum"] = b.choices;
  const bool nullable = f.empty_is_null || std::holds_alternative<std::monostate>(f.get(RunConfig{}));
  if (nullable) s["type"] = {s["type"], "null"};
  s["description"] = f.option.empty()                        ? f.help
                     : f.kind == FieldKind::kFlag && !f.flag_value ? f.option + " sets it false: " + f.help
                                                                    : f.option + ": " + f.help;
  return s;
}

// Puts the field's schema at its JSON path, making each object on the way
// and naming it in its parent's required list when the field is required; an
// index ("/train/betas/0") makes its parent an array of as many items.
void place(json& root, const ConfigField& f) {
  std::vector<std::string> tokens;
  for (size_t start = 1; start <= f.json_path.size();) {
    const size_t end = std::min(f.json_path.find('/', start), f.json_path.size());
    tokens.push_back(f.json_path.substr(start, end - start));
    start = end + 1;
  }
  const bool required = f.if_absent == nullptr;
  json* node = &root;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (!t.empty() && std::isdigit(static_cast<unsigned char>(t[0]))) {  // an array's item
      json item = field_schema(f);
      const std::string what = node->value("description", std::string());
      *node = {{"type", "array"}, {"items", item}, {"minItems", std::stoi(t) + 1}, {"maxItems", std::stoi(t) + 1},
               {"description", (what.empty() ? "" : what + "; ") + f.help}};
      (*node)["items"].erase("description");
      return;
    }
    json& props = (*node)["properties"];
    if (i + 1 == tokens.size()) props[t] = field_schema(f);
    else if (!props.contains(t)) props[t] = object_schema();
    json& req = (*node)["required"];
    if (required && std::find(req.begin(), req.end(), t) == req.end()) req.push_back(t);
    node = &props[t];
  }
}

}  // namespace

json config_schema() {
  json s = object_schema();
  s["description"] = "the resolved config: every field (variants/config_fields.cpp), the preset, the rung and its "
                     "switches, the device, and what the config derives";
  json& p = s["properties"];
  p["preset"] = {{"type", "string"}, {"description", "the model preset the config starts from"}};
  p["rung"] = {{"type", "string"}, {"description", "the rung measured: a ladder rung, a composite or a peer"}};
  p["device"] = {{"type", "string"}, {"pattern", "^(cpu|cuda(:[0-9]+)?)$"}};
  // A flag per declared switch, by name; not listed, so that a new switch
  // leaves the schema as it is.
  p["switches"] = {{"type", "object"}, {"additionalProperties", {{"type", "boolean"}}}, {"minProperties", 1},
                   {"description", "which switches are on: one flag per switch declared in variants/switches/ "
                                   "(`ladder switches`); a group (fused) is on when all its parts are. Reports "
                                   "of schema_version 1 name only the group."}};
  for (const char* derived : {"micro_steps", "world_size", "model_vocab"})
    p[derived] = {{"type", "integer"}, {"minimum", 0}};
  s["required"] = {"preset", "rung", "device", "micro_steps", "world_size", "model_vocab"};
  for (const ConfigField& f : config_fields()) place(s, f);
  return s;
}

}  // namespace ladder
