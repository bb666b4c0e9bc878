// reports/model/report/rung_report.cpp: see rung_report.h.
#include "reports/model/report/rung_report.h"

#include "reports/model/json_fields.h"

namespace ladder {

const std::vector<std::string>& ok_report_sections() {
  static const std::vector<std::string> kSections = {
      "suite", "environment", "world_size", "data", "model", "timing", "flops", "throughput", "mfu", "memory",
      "steps", "warmup_steps", "summary", "switches", "parity", "op_counts"};
  return kSections;
}

nlohmann::json RungReport::summary_of(const char* metric, const char* stat) const {
  if (!summary || !summary->contains(metric)) return nullptr;
  const nlohmann::json& m = (*summary)[metric];
  return m.is_object() && m.contains(stat) ? m[stat] : nlohmann::json();
}

std::optional<double> RungReport::summary_value(const char* metric, const char* stat) const {
  return json_fields::as_number(summary_of(metric, stat));
}

void RungReport::schema_extra(nlohmann::json& schema) {
  nlohmann::json ok_required = schema["required"];
  for (const auto& name : ok_report_sections()) ok_required.push_back(name);
  schema["if"] = {{"properties", {{"status", {{"const", "ok"}}}}}};
  schema["then"] = {{"required", ok_required}};
  schema["else"] = {{"required", {"failure"}}};
  schema["allOf"] = {{{"if", {{"properties", {{"rung", {{"pattern", "^peer-"}}}}}, {"required", {"rung"}}}},
                      {"then", {{"required", {"peer"}}}},
                      {"else", {{"not", {{"required", {"peer"}}}}}}}};
}

}  // namespace ladder
