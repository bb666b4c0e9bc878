// reports/render/figure_cells.cpp: see figure_cells.h.
#include "reports/render/figure_cells.h"

namespace ladder {

using json = nlohmann::json;

TableCell figure_cell(const RunFigure& f, const std::optional<double>& value, const std::string& marker) {
  if (!value) return {"-", ""};
  TableCell c = number_cell(*value * f.scale, f.format, marker);
  // The value as machines read it: unscaled, unless the text has a marker
  // that says which peak it is of (then the text is the value).
  c.value = marker.empty() ? json(*value) : json();
  return c;
}

TableCell figure_cell(const RunFigure& f, const std::optional<WrittenNumber>& value, const std::string& marker) {
  TableCell c = figure_cell(f, value ? std::optional(value->value) : std::nullopt, marker);
  if (value && value->integer && c.value.is_number()) c.value = int64_t(value->value);
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
