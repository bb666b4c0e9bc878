// bench/measure/config_options.cpp: see config_options.h.
#include "bench/measure/config_options.h"

#include <fmt/format.h>

#include "bench/measure/device/device.h"
#include "variants/config_fields.h"

namespace ladder {

namespace {

// The field's value as the CLI spells it: `text` of a value option.
FieldValue parse_option(const ConfigField& f, const std::string& text) {
  switch (f.kind) {
    case FieldKind::kInt: return parse_int(f.option, text);
    case FieldKind::kNumber: return parse_double(f.option, text);
    case FieldKind::kText: return text;
    case FieldKind::kFlag: break;
  }
  return f.flag_value;
}

}  // namespace

void add_config_options(ArgParser& ap, ConfigOptions& c) {
  std::string presets_list;
  for (const auto& p : presets()) presets_list += (presets_list.empty() ? "" : "|") + p.name;
  Overrides& o = c.o;
  ap.add_value("--device", "cpu|cuda|cuda:N", "device (default: cuda when available, else cpu)",
               [&o](const std::string& v) { o.device = v; });
  ap.add_value("--preset", presets_list, "model preset (default: gpt2-124m on CUDA, cpu-default on CPU)",
               [&c](const std::string& v) { c.preset = v; });
  ap.add_value("--out", "RUN_DIR", "run directory (default runs/<run_id>)",
               [&c](const std::string& v) { c.out_dir = v; });
  const RunConfig defaults;
  for (const ConfigField& f : config_fields()) {
    if (f.option.empty()) continue;
    std::string help = f.help;
    if (f.show_default) help += fmt::format(" (default {})", value_text(f.get(defaults)));
    auto set = [&o, &f](const std::string& text) {
      o.fields.set(f.name, check_input(f, parse_option(f, text), f.option));
    };
    if (f.kind == FieldKind::kFlag)
      ap.add_flag(f.option, help, [set] { set(""); });
    else
      ap.add_value(f.option, f.metavar, help, set);
  }
}

std::string resolve_device(const Overrides& o) {
  const std::string spec = o.device.value_or(default_device_spec());
  parse_device(spec);  // throws ConfigError for bad specs or missing CUDA
  return spec;
}

std::string default_preset(const std::string& device) {
  return device.rfind("cuda", 0) == 0 ? "gpt2-124m" : "cpu-default";
}

RunConfig config_for(const std::string& preset_name, const Overrides& o, const std::string& device) {
  const Preset& preset = find_preset(preset_name);
  RunConfig c;
  c.device = device;
  c.preset = preset.name;
  c.model = preset.model;
  c.batch = preset.batch;
  c.seq = preset.seq;
  c.total_batch = preset.total_batch;
  o.fields.apply(c);
  return c;
}

}  // namespace ladder
