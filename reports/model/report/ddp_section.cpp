// reports/model/report/ddp_section.cpp: see ddp_section.h.
#include "reports/model/report/ddp_section.h"

#include <string>

namespace ladder {

std::vector<RankFacts> rank_facts_of(const std::vector<nlohmann::json>& per_rank) {
  std::vector<RankFacts> out;
  for (size_t i = 0; i < per_rank.size(); ++i)
    out.push_back(fields::from_json_part<RankFacts>(per_rank[i], "ddp.per_rank[" + std::to_string(i) + "]"));
  return out;
}

std::vector<RankFacts> DdpSection::rank_facts() const { return rank_facts_of(per_rank); }

}  // namespace ladder
