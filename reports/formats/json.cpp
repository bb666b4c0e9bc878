// reports/formats/json.cpp: `--format json`, the model the document's
// tables came from, whole: a run's summary.json, or the comparison of
// `ladder compare` (reports/model/comparison/comparison.h). Scripts read this, not the tables.
#include "reports/render/reporter.h"

namespace ladder {
namespace {

class JsonReporter : public Reporter {
 public:
  std::string name() const override { return "json"; }
  bool renders(DocumentKind) const override { return true; }
  std::string render(const Document& doc, const RenderOptions&) const override { return doc.data.dump(2) + "\n"; }
};

}  // namespace

const Reporter& json_reporter() {
  static const JsonReporter kReporter;
  return kReporter;
}

}  // namespace ladder
