// reports/model/report/ddp_section.cpp: see ddp_section.h.
#include "reports/model/report/ddp_section.h"

#include <algorithm>
#include <string>

namespace ladder {

void to_json(nlohmann::json& j, const RankFigures& r) {
  j = fields::to_json(r.facts);
  for (const auto& [key, c] : r.columns) j[key] = c;
}

void from_json(const nlohmann::json& j, RankFigures& r) {
  r = RankFigures{};
  r.facts = fields::from_json_part<RankFacts>(j, "");
  const std::vector<std::string>& facts = fields::detail::field_names<RankFacts>();
  for (const auto& [key, values] : j.items())
    if (std::find(facts.begin(), facts.end(), key) == facts.end()) r.columns[key] = read_step_column(values, "." + key);
}

std::vector<RankFacts> DdpSection::rank_facts() const {
  std::vector<RankFacts> out;
  for (const RankFigures& r : per_rank) out.push_back(r.facts);
  return out;
}

}  // namespace ladder
