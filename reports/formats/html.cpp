// reports/formats/html.cpp: `--format html`, a comparison as one
// self-contained page with charts (reports/html_report.h draws it).
#include "reports/html_report.h"
#include "reports/reporter.h"

namespace ladder {
namespace {

class HtmlReporter : public Reporter {
 public:
  std::string name() const override { return "html"; }
  bool renders(DocumentKind kind) const override { return kind == DocumentKind::kComparison; }
  std::string render(const Document& doc, const RenderOptions&) const override {
    return render_comparison_html(doc.data);
  }
};

}  // namespace

const Reporter& html_reporter() {
  static const HtmlReporter kReporter;
  return kReporter;
}

}  // namespace ladder
