// reports/commands/export.cpp: see export.h.
#include "reports/commands/export.h"

#include <unistd.h>


#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profiler/common/cli.h"
#include "reports/render/reporter.h"
#include "reports/stats/stats.h"
#include "reports/render/documents/run_document.h"
#include "profiler/common/config_error.h"

namespace ladder {

int export_command(const std::vector<std::string>& args) {
  std::string out, format;
  std::vector<std::string> inputs;
  ArgParser ap("export",
               "Export a finished run in another format: ladder export --format NAME RUN [--out FILE].\n"
               "RUN is a run directory, a summary.json or a rung report (gbench only).");
  ap.add_value("--format", "NAME",
               fmt::format("{} (gbench: google/benchmark JSON, readable by its tools/compare.py; the others: "
                           "the run's table, as `ladder run --format` prints it)",
                           format_names(DocumentKind::kRun)),
               [&](const std::string& v) { format = v; });
  ap.add_flag("--gbench", "the same as --format gbench", [&] { format = "gbench"; });
  ap.add_value("--out", "FILE", "write here instead of stdout", [&](const std::string& v) { out = v; });
  ap.allow_positionals(&inputs);
  if (!ap.parse(args)) return 0;
  if (format.empty())
    throw ConfigError(fmt::format("export: choose a format; expected --format with one of {}",
                                  format_names(DocumentKind::kRun)));
  const Reporter& reporter = find_reporter("--format", format, DocumentKind::kRun);
  if (inputs.size() != 1)
    throw ConfigError(fmt::format("export: got {} inputs, expected exactly one RUN", inputs.size()));
  const LoadedRun run = load_run(inputs[0], "A");
  const std::string summary_path = summary_file(inputs[0]);
  if (summary_path.empty() && !reporter.needs_reports())
    throw ConfigError(fmt::format("export: '{}' has no summary.json; --format {} renders a run's summary, expected a "
                                  "run directory or its summary.json",
                                  inputs[0], format));
  Document doc = summary_path.empty() ? Document{} : summary_document(load_summary(summary_path), summary_path);
  doc.run = &run;
  print_or_write(reporter.render(doc, {out.empty() && isatty(STDOUT_FILENO) != 0}), out);
  return 0;
}

}  // namespace ladder
