// reports/commands/bands.cpp: see bands.h.
#include "reports/commands/bands.h"

#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profiler/common/cli.h"
#include "profiler/common/config_error.h"
#include "reports/model/report/report_loader.h"
#include "reports/model/run/summary_json.h"
#include "reports/render/sections/band_tables.h"
#include "reports/render/sections/rank_tables.h"
#include "reports/render/reporter.h"

namespace ladder {

using json = nlohmann::json;

int bands_command(const std::vector<std::string>& args) {
  std::string peer;
  bool ranks = false;
  std::vector<std::string> inputs;
  ArgParser ap("bands",
               "Where a run's top rung spends its step against each PyTorch peer, band by band (the op breakdown's "
               "categories, ms per step): ladder bands RUN [--peer NAME] [--format text|markdown|json]; with "
               "--ranks, each rank of its multi-rank cells (ddp) instead: phases, bands and the slow-rank verdict.\n"
               "RUN is a `ladder run --peers ...` directory or its summary.json. Exit 0 printed, 1 the rung or a "
               "breakdown is missing (--ranks: no multi-rank cell with per-rank figures), 2 bad input, 3 no peer to "
               "compare against.");
  ap.add_value("--peer", "NAME", "the peer whose difference column comes first (default compile, else eager)",
               [&](const std::string& v) { peer = v; });
  ap.add_flag("--ranks", "each rank of the run's multi-rank cells: its phases per step, its bands, which is slowest",
              [&] { ranks = true; });
  const TableOutputOptions output(ap, {"text", "markdown", "json"});
  ap.allow_positionals(&inputs);
  if (!ap.parse(args)) return 0;
  const std::string& input = one_input("bands", inputs, "RUN directory");
  output.check("bands");
  namespace fs = std::filesystem;
  const std::string summary_path = summary_file(input);
  if (summary_path.empty())
    throw ConfigError(fmt::format("bands: '{}' has no summary.json; expected a `ladder run` directory",
                                  input));
  const std::string run_dir = fs::path(summary_path).parent_path().string();
  RunBands bands;
  if (ranks) {
    if (!peer.empty()) throw ConfigError("bands: --peer and --ranks; expected one of them (--ranks compares ranks)");
    RunRanks views = run_rank_views(read_run_summary(load_summary(summary_path)), run_dir);
    for (auto& v : views.views)
      for (auto& t : v.tables) bands.tables.push_back(std::move(t));
    bands.why = views.why;
    bands.exit_code = bands.tables.empty() ? 1 : 0;
  } else {
    bands = run_band_table(read_run_summary(load_summary(summary_path)), run_dir, peer);
  }
  Document doc;
  doc.title = "ladder bands: " + input;
  doc.tables = std::move(bands.tables);
  if (doc.tables.empty()) doc.notes.push_back({bands.why, "bands:"});
  doc.data = {{"run", input}, {"tables", json::array()}, {"why", doc.tables.empty() ? json(bands.why) : json()}};
  for (const auto& t : doc.tables) doc.data["tables"].push_back(table_json(t));
  const Reporter& reporter = find_reporter("--format", output.format, DocumentKind::kRun);
  const std::string text = reporter.render(doc, {output.out.empty() && isatty(STDOUT_FILENO) != 0});
  print_or_write(text, output.out);
  return bands.exit_code;
}

}  // namespace ladder
