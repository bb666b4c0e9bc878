// reports/commands/compare.cpp: see compare.h.
#include "reports/commands/compare.h"

#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "profiler/common/atomic_file.h"
#include "profiler/common/cli.h"
#include "profiler/common/config_error.h"
#include "reports/model/comparison/comparison.h"
#include "reports/render/documents/comparison_document.h"
#include "reports/render/reporter.h"

namespace ladder {

int compare_command(const std::vector<std::string>& args) {
  CompareOptions opts;
  std::string format = "text", html, out;
  std::vector<std::string> inputs;
  ArgParser ap("compare",
               "Compare runs: ladder compare BASELINE OTHER [MORE ...]. Each input is a run directory,\n"
               "a summary.json or a rung report, or runs joined by commas (a1,a2,a3). An input's samples\n"
               "are its per-process medians ('ladder run --repeat N', 2 by default, or joined runs): each\n"
               "ratio is shown with its 95 % interval (Welch's t on the logs). A rung is faster or slower\n"
               "only when p < --alpha (Holm-adjusted), the median dt moved by --noise-threshold or more and\n"
               "the interval excludes no change; within noise when the interval lies inside the threshold;\n"
               "unresolved otherwise. One process per rung gives no verdict (its steps are not independent).\n"
               "Different presets, batches, sequence lengths or rung definitions are refused unless --force.");
  ap.add_value("--alpha", "P", "significance level (default 0.05)",
               [&](const std::string& v) { opts.alpha = parse_double("--alpha", v); });
  ap.add_value("--noise-threshold", "PCT",
               "smallest change of median dt, in %, called faster or slower (default 1)",
               [&](const std::string& v) { opts.noise_threshold_pct = parse_double("--noise-threshold", v); });
  ap.add_value("--format", "NAME",
               fmt::format("output format: {} (default text; html: a page with charts)",
                           format_names(DocumentKind::kComparison)),
               [&](const std::string& v) { format = v; });
  ap.add_value("--out", "FILE", "write the output here instead of stdout", [&](const std::string& v) { out = v; });
  ap.add_value("--html", "OUT.html", "also write the HTML page (as --format html) here",
               [&](const std::string& v) { html = v; });
  ap.add_flag("--kernels",
              "also compare every rung's kernels (CUDA) or operators (CPU), matched by family: each input's ms "
              "and calls per step, the difference with its 95 % interval, families added and removed, and the "
              "same per band",
              [&] { opts.kernels = true; });
  ap.add_value("--kernel-threshold", "PCT",
               "with --kernels: the smallest change of a family's ms per step called slower or faster (default 5)",
               [&](const std::string& v) { opts.kernel_threshold_pct = parse_double("--kernel-threshold", v); });
  ap.add_flag("--force", "compare even when the configs differ", [&] { opts.force = true; });
  ap.allow_positionals(&inputs);
  if (!ap.parse(args)) return 0;
  if (inputs.empty())
    throw ConfigError("compare: got no input; expected at least two (a baseline and another), or one A/B run");
  if (!(opts.alpha > 0 && opts.alpha < 1))
    throw ConfigError(fmt::format("--alpha: got {}, expected a number in (0, 1)", opts.alpha));
  if (!(opts.noise_threshold_pct >= 0))
    throw ConfigError(fmt::format("--noise-threshold: got {}, expected a percentage >= 0", opts.noise_threshold_pct));
  if (!(opts.kernel_threshold_pct >= 0))
    throw ConfigError(
        fmt::format("--kernel-threshold: got {}, expected a percentage >= 0", opts.kernel_threshold_pct));
  const Reporter& reporter = find_reporter("--format", format, DocumentKind::kComparison);
  for (const auto& [option, file] : {std::pair{"--html", html}, std::pair{"--out", out}})
    if (!file.empty() && std::filesystem::path(file).has_parent_path())
      ensure_writable_dir(std::filesystem::path(file).parent_path().string(), option);
  std::vector<LoadedRun> runs;
  for (size_t i = 0; i < inputs.size(); ++i)
    runs.push_back(load_run_group(inputs[i], i < 26 ? std::string(1, char('A' + i)) : fmt::format("I{}", i)));
  if (runs.size() == 1) {  // one A/B run: its two sides, paired by round
    runs = split_sides(runs.front());
    opts.paired = true;
  }
  // Single rung reports of different rungs (fp32 vs bf16, say) are compared
  // as one row; their differing switches then need --force.
  bool all_single = true;
  for (const auto& r : runs) all_single = all_single && r.cells.size() == 1;
  if (all_single)
    for (auto& r : runs) {
      r.cells[0] = runs[0].cells[0];
      for (auto& rep : r.repeats) rep.cells[0] = runs[0].cells[0];
    }
  const Document doc = comparison_document(compare(runs, opts));
  const std::string text = reporter.render(doc, {out.empty() && isatty(STDOUT_FILENO) != 0});
  if (out.empty()) {
    fmt::print("{}", text);
  } else {
    write_file_atomically(out, text);
    fmt::print(stderr, "{}: {}\n", format, out);
  }
  if (!html.empty()) {
    write_file_atomically(html, find_reporter("--html", "html", DocumentKind::kComparison).render(doc, {}));
    fmt::print(stderr, "html: {}\n", html);
  }
  return 0;
}

}  // namespace ladder
