// reports/render/figure_cells.cpp: see figure_cells.h.
#include "reports/render/figure_cells.h"

namespace ladder {

using json = nlohmann::json;

TableCell figure_cell(const RunFigure& f, const json& value, const std::string& marker) {
  if (!value.is_number()) return {"-", ""};
  TableCell c = number_cell(json(value.get<double>() * f.scale), f.format, marker);
  // The value as machines read it: unscaled, unless the text has a marker
  // that says which peak it is of (then the text is the value).
  c.value = marker.empty() ? value : json();
  return c;
}

Column figure_column(const RunFigure& f, const std::string& key_prefix) {
  return {key_prefix + f.key, f.header, f.unit};
}

Tone verdict_tone(const std::string& verdict) {
  if (verdict.rfind("faster", 0) == 0) return Tone::kGood;
  if (verdict.rfind("slower", 0) == 0) return Tone::kBad;
  return verdict.rfind("within noise", 0) == 0 ? Tone::kPlain : Tone::kWarn;
}

}  // namespace ladder
