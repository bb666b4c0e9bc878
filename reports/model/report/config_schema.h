// reports/model/report/config_schema.h: the schema of a report's `config`,
// generated from the config fields' declarations (variants/config_fields.cpp:
// each field's JSON path, kind, bounds and help), plus the few keys outside
// the table (the preset, the rung, the switches' flags, the device and what
// the config derives). A field an older config may lack
// (if_absent) is not required; nor is an object all of whose fields are.
#pragma once

#include <nlohmann/json.hpp>

namespace ladder {

nlohmann::json config_schema();

}  // namespace ladder
