// reports/reporter.h: one reporter per output format (as google/benchmark
// has), and the one list of them that `--format` of `ladder run`, `ladder
// compare` and `ladder export` reads. A reporter renders a Document
// (reports/document.h); each lives in its own file under reports/formats/,
// and a new format is that file plus one line in the list (reporter.cpp).
#pragma once

#include <string>
#include <vector>

#include "reports/document.h"

namespace ladder {

struct RenderOptions {
  bool color = false;  // ANSI colours (a terminal)
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual std::string name() const = 0;                          // "csv": what --format takes
  virtual std::vector<std::string> aliases() const { return {}; }  // other names --format takes: "md"
  virtual bool renders(DocumentKind kind) const = 0;
  // Whether render() reads Document::run, the run's reports (not only its summary).
  virtual bool needs_reports() const { return false; }
  virtual std::string render(const Document& doc, const RenderOptions& opts) const = 0;
};

// Every format, in the order --help lists them.
const std::vector<const Reporter*>& reporters();

// The reporter that `option` ("--format") named by `name` or an alias, for a
// document of `kind`. Throws ConfigError (exit 2) naming the option, the
// value and the formats that render that kind.
const Reporter& find_reporter(const std::string& option, const std::string& name, DocumentKind kind);

// "text, csv, json": the names of the formats that render `kind`.
std::string format_names(DocumentKind kind);

}  // namespace ladder
