// reports/model/report/speed_of_light_section.cpp: see speed_of_light_section.h.
#include "reports/model/report/speed_of_light_section.h"

namespace ladder {

nlohmann::json speed_of_light_section_schema() {
  const nlohmann::json unavailable = {{"type", "object"},
                                      {"additionalProperties", false},
                                      {"required", {"unavailable"}},
                                      {"properties", {{"unavailable", {{"type", "string"}}}}}};
  return {{"description",
           "Every band of the step against the machine's own limits (bench/measure/roofline/speed_of_light.h): per band "
           "the op breakdown's measured ms, the floor from the step's work (variants/work_model.h) at the run's "
           "ceilings, the binding ceiling, efficiency and headroom; {unavailable} with why where there is no "
           "valid breakdown or no ceiling. `ladder sol RUN` prints it."},
          {"oneOf", {{{"type", "null"}}, unavailable, fields::schema_of<SpeedOfLightSection>()}}};
}

std::optional<SpeedOfLightSection> read_speed_of_light(const nlohmann::json& section, const std::string& where) {
  if (!section.is_object() || section.contains("unavailable")) return std::nullopt;
  return fields::from_json<SpeedOfLightSection>(section, where);
}

}  // namespace ladder
