// bench/measure/config_options.h: the options `ladder run` and `ladder
// measure` share: the device, the preset, the run directory, and one option
// per config field (variants/config_fields.cpp), read into Overrides.
#pragma once

#include <optional>
#include <string>

#include "profiler/common/cli.h"
#include "variants/config/config.h"
#include "variants/config_fields.h"

namespace ladder {

// Explicit `ladder run` and `ladder measure` values, applied on top of each
// preset: the device (resolved by the caller) and the config fields a user
// set, by name (variants/config_fields.h).
struct Overrides {
  std::optional<std::string> device;
  FieldSettings fields;
};

// What the shared options set.
struct ConfigOptions {
  Overrides o;
  std::optional<std::string> preset;
  std::string out_dir;
};

void add_config_options(ArgParser& ap, ConfigOptions& c);

// --device, or the default device (cuda when available); throws ConfigError
// for a bad spec or a missing GPU.
std::string resolve_device(const Overrides& o);

// The preset's config with the overrides applied, on `device`; throws
// ConfigError for an unknown preset or a bad value.
RunConfig config_for(const std::string& preset, const Overrides& o, const std::string& device);

// The default preset of a device: gpt2-124m on CUDA, cpu-default on a CPU.
std::string default_preset(const std::string& device);

}  // namespace ladder
