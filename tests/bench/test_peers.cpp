// tests/bench/test_peers.cpp: a peer's identity in the report (PeerSection,
// reports/model/report/identity_section.h) and the peer table it names
// (bench/run/peers.h).
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/run/peers.h"

namespace ladder {
namespace {

// Every declared peer's section reads back strictly, and the schema allows
// exactly the table's names: a peer added to the table and not to the
// section (or the other way) fails here, not in a user's report.
TEST(Peers, TheSectionNamesExactlyThePeerTable) {
  std::vector<nlohmann::json> names;
  for (const PeerInfo& p : peer_table()) {
    names.push_back(p.name);
    const PeerSection s = peer_section(p.name);
    EXPECT_EQ(s.what, p.what);
    EXPECT_EQ(s.program, "scripts/peer.py");
    EXPECT_FALSE(s.torch_version.has_value());  // nothing ran yet: null, not absent
    const nlohmann::json j = fields::to_json(s);
    EXPECT_TRUE(j.contains("torch_version") && j["torch_version"].is_null()) << j.dump();
    EXPECT_EQ(fields::from_json<PeerSection>(j, "report.json: peer").name, p.name);
  }
  EXPECT_EQ(fields::schema_of<PeerSection>()["properties"]["name"]["enum"], nlohmann::json(names));
  nlohmann::json other = fields::to_json(peer_section("eager"));
  other["name"] = "jax";
  EXPECT_THROW(fields::from_json<PeerSection>(other, "report.json: peer"), ConfigError);
  EXPECT_THROW(peer_section("jax"), std::logic_error);
}

}  // namespace
}  // namespace ladder
