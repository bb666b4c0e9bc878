// reports/model/report/roofline_section.cpp: see roofline_section.h.
#include "reports/model/report/roofline_section.h"

#include <fmt/format.h>

#include "profiler/common/config_error.h"

namespace ladder {

void SummaryRoofline::schema_extra(nlohmann::json& schema) {
  const nlohmann::json file = fields::schema_of<RooflineFile>();
  schema["if"] = {{"properties", {{"status", {{"const", "ok"}}}}}};
  schema["then"] = {{"required", file["required"]}};
}

void check_memory_bandwidth(const MemoryBandwidth& m, const std::string& file) {
  if (m.sizes.empty())
    throw ConfigError(fmt::format("{}: field 'memory.sizes' is [], expected a non-empty array", file));
  for (size_t i = 1; i < m.sizes.size(); ++i)
    if (m.sizes[i].working_set_bytes <= m.sizes[i - 1].working_set_bytes)
      throw ConfigError(fmt::format("{}: field 'memory.sizes[{}].working_set_bytes' is {}, expected more than the "
                                    "size before it ({}): the sizes ascend",
                                    file, i, m.sizes[i].working_set_bytes, m.sizes[i - 1].working_set_bytes));
}

RooflineFile roofline_file_from(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object() || j.value("kind", "") != kRooflineKind)
    throw ConfigError(fmt::format("{}: field 'kind' is {}, expected \"{}\"", file,
                                  j.is_object() && j.contains("kind") ? j["kind"].dump() : "missing", kRooflineKind));
  RooflineFile r = fields::from_json<RooflineFile>(j, file);
  if (r.memory) check_memory_bandwidth(*r.memory, file);
  return r;
}

}  // namespace ladder
