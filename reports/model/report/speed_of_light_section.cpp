// reports/model/report/speed_of_light_section.cpp: see speed_of_light_section.h.
#include "reports/model/report/speed_of_light_section.h"

namespace ladder {

void SolSection::schema_extra(nlohmann::json& schema) {
  schema["description"] =
      "Every band of the step against the machine's own limits (bench/measure/roofline/speed_of_light.h): per band "
      "the op breakdown's measured ms, the floor from the step's work (variants/work_model.h) at the run's "
      "ceilings, the binding ceiling, efficiency and headroom; {unavailable} with why where there is no valid "
      "breakdown or no ceiling. `ladder sol RUN` prints it.";
  const nlohmann::json table = fields::schema_of<SpeedOfLightSection>();
  schema["if"] = {{"required", {"unavailable"}}};
  schema["then"] = {{"maxProperties", 1}};
  schema["else"] = {{"required", table["required"]}};
}

const SpeedOfLightSection* sol_table(const fields::Maybe<std::optional<SolSection>>& section) {
  return section && *section ? (*section)->measured() : nullptr;
}

}  // namespace ladder
