// reports/model/report/rung_report.cpp: see rung_report.h.
#include "reports/model/report/rung_report.h"


namespace ladder {

const std::vector<std::string>& ok_report_sections() {
  static const std::vector<std::string> kSections = {
      "suite", "environment", "world_size", "data", "model", "timing", "flops", "throughput", "mfu", "memory",
      "steps", "warmup_steps", "summary", "switches", "parity", "op_counts"};
  return kSections;
}

std::optional<double> RungReport::summary_value(const std::string& metric, double Summary::*stat) const {
  const Summary* s = summary ? summary->of(metric) : nullptr;
  return s ? std::optional<double>(s->*stat) : std::nullopt;
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
