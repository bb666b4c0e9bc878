// reports/model/run/run_model.cpp: see run_model.h.
#include "reports/model/run/run_model.h"

#include <tuple>

#include <fmt/format.h>

namespace ladder {

using nlohmann::json;

RatioInterval RowRatio::as_interval() const {
  RatioInterval r;
  r.ratio = value.value_or(0);
  if (interval) std::tie(r.lo, r.hi) = *interval;
  if (p) r.p_value = *p;
  return r;
}

std::string SummaryRow::bare_cell() const { return side.empty() ? cell : cell.substr(side.size() + 1); }

std::string SummaryRow::shape() const { return fmt::format("{}|{}|{}|{}", side, preset, batch, seq); }

std::optional<WrittenNumber> SummaryRow::written_figure(const std::string& key) const {
  const auto it = figures.find(key);
  return it == figures.end() ? std::nullopt : std::optional(it->second);
}

std::optional<double> SummaryRow::figure(const std::string& key) const {
  const auto v = written_figure(key);
  return v ? std::optional(v->value) : std::nullopt;
}

std::string SummaryRow::marker(const std::string& key) const {
  const auto it = markers.find(key);
  return it == markers.end() ? "" : it->second;
}

}  // namespace ladder
