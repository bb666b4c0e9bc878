// reports/formats/html.cpp: `--format html`, any document as one
// self-contained page with its charts (reports/render/html/html_report.h draws it).
#include "reports/render/html/html_report.h"
#include "reports/render/reporter.h"

namespace ladder {
namespace {

class HtmlReporter : public Reporter {
 public:
  std::string name() const override { return "html"; }
  bool renders(DocumentKind) const override { return true; }
  std::string render(const Document& doc, const RenderOptions&) const override { return render_html(doc); }
};

}  // namespace

const Reporter& html_reporter() {
  static const HtmlReporter kReporter;
  return kReporter;
}

}  // namespace ladder
