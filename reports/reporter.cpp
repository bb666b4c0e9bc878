// reports/reporter.cpp: the list of formats (see reporter.h).
#include "reports/reporter.h"

#include <algorithm>

#include <fmt/format.h>

#include "variants/config.h"  // ConfigError

namespace ladder {

// One line per format; each is defined in reports/formats/<name>.cpp.
const Reporter& text_reporter();
const Reporter& csv_reporter();
const Reporter& json_reporter();
const Reporter& html_reporter();
const Reporter& gbench_reporter();
const Reporter& markdown_reporter();

const std::vector<const Reporter*>& reporters() {
  static const std::vector<const Reporter*> kAll = {
      &text_reporter(), &csv_reporter(), &json_reporter(), &html_reporter(), &gbench_reporter(), &markdown_reporter(),
  };
  return kAll;
}

std::string format_names(DocumentKind kind) {
  std::string names;
  for (const Reporter* r : reporters())
    if (r->renders(kind)) names += (names.empty() ? "" : ", ") + r->name();
  return names;
}

const Reporter& find_reporter(const std::string& option, const std::string& name, DocumentKind kind) {
  for (const Reporter* r : reporters()) {
    const auto aliases = r->aliases();
    if (r->name() != name && std::find(aliases.begin(), aliases.end(), name) == aliases.end()) continue;
    if (!r->renders(kind))
      throw ConfigError(fmt::format("{}: '{}' cannot render {}; expected one of {}", option, name,
                                    kind == DocumentKind::kRun ? "a run" : "a comparison", format_names(kind)));
    return *r;
  }
  throw ConfigError(fmt::format("{}: '{}' is not a format; expected one of {}", option, name, format_names(kind)));
}

}  // namespace ladder
