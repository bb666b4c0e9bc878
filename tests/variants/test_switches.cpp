// tests/variants/test_switches.cpp: the switch declarations (variants/switches/): one
// consistent list, the JSON names, the report's entries and the docs' table.
#include <algorithm>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/tiny_step.h"
#include "variants/config/rungs.h"
#include "variants/switches/switch.h"

namespace ladder {
namespace {

TEST(Switches, DeclarationsAreConsistent) {
  std::set<std::string> names;
  std::set<int> orders;
  int previous_order = -1;
  for (const SwitchDecl* s : all_switches()) {
    EXPECT_TRUE(names.insert(s->name).second) << "two switches named " << s->name;
    EXPECT_TRUE(orders.insert(s->order).second) << s->name << ": order " << s->order << " taken twice";
    EXPECT_GT(s->order, previous_order) << "all_switches() is not sorted by order at " << s->name;
    previous_order = s->order;
    EXPECT_EQ(find_switch(s->name), s);
    EXPECT_EQ(all_switches()[switch_index(*s)], s);
    const bool group = s->role == SwitchRole::kGroup;
    EXPECT_TRUE(!group || !parts_of(*s).empty()) << s->name << ": a group without parts";
    EXPECT_TRUE(group || s->describe) << s->name << ": no describe";
    EXPECT_EQ(s->role == SwitchRole::kPart, s->group != nullptr) << s->name;
    if (s->group) {
      const SwitchDecl* g = s->group;
      ASSERT_EQ(find_switch(g->name), g) << s->name << ": its group " << g->name << " is not declared";
      EXPECT_EQ(g->role, SwitchRole::kGroup) << s->name << ": group " << g->name << " is not a group";
      // A part sits between its group and the next rung.
      EXPECT_GT(s->order, g->order) << s->name;
      EXPECT_LT(s->order, g->order + 100) << s->name;
    }
    if (s->role == SwitchRole::kExtra) {
      EXPECT_GE(s->order, 1000) << s->name << ": extras come after the ladder";
    }
    for (const SwitchDecl* need : s->needs) {
      if (need) {
        EXPECT_NE(std::find(all_switches().begin(), all_switches().end(), need), all_switches().end())
            << s->name << " needs an undeclared switch";
      }
    }
  }
  // Every declaration but a group has a flag of its own, and the flags are
  // independent: setting all sets one per declaration.
  Switches all;
  size_t groups = 0;
  for (const SwitchDecl* s : all_switches()) {
    all.set(*s, true);
    groups += s->role == SwitchRole::kGroup;
  }
  EXPECT_EQ(all.count(), all_switches().size() - groups);
  EXPECT_LE(all_switches().size(), Switches::kMaxSwitches);
  EXPECT_THROW(switch_named("no-such-switch"), std::logic_error);
  EXPECT_EQ(find_switch("fused-adamw"), &switches::fused_adamw);
}

// Reports written before fused had parts name only "fused": it turns every
// part on; the JSON has every declared name, and a group's flag.
TEST(Switches, JsonUsesTheDeclaredNamesAndReadsOldReports) {
  const Switches top = parse_rung("fused-adamw").sw;
  nlohmann::json j = top;
  EXPECT_TRUE(j["fused-adamw"].get<bool>() && j["fused"].get<bool>() && j["cuda-graph"].get<bool>());
  EXPECT_EQ(j.get<Switches>(), top);
  const nlohmann::json old = {{"tf32", true},  {"bf16", false}, {"fused", true},      {"flash", false},
                              {"vocab-pad", false}, {"fused-adamw", false}, {"grad-accum", false}, {"ddp", false}};
  const Switches read = old.get<Switches>();
  EXPECT_TRUE(read.on(switches::tf32) && read.on(switches::fused) && read.on(switches::flat_grads) && read.on(switches::cuda_graph) && !read.on(switches::flash));
  EXPECT_THROW((nlohmann::json{{"turbo", true}}.get<Switches>()), ConfigError);
}

// A report names every declared switch, under its declared name, in both
// places: config.switches (flags) and switches (what each did).
TEST(Switches, ReportsNameEveryDeclaredSwitch) {
  std::vector<std::string> declared;
  for (const SwitchDecl* s : all_switches()) declared.push_back(s->name);
  auto keys = [](const nlohmann::json& j) {
    std::vector<std::string> k;
    for (const auto& item : j.items()) k.push_back(item.key());
    return k;
  };
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  const nlohmann::json flags = parse_rung("fp32").sw;
  EXPECT_EQ(keys(flags), sorted(declared));
  auto owned = tiny_cpu_step("fp32+fused-ce");
  EXPECT_EQ(keys(fields::to_json(owned->describe_switches())), sorted(declared));
}

// A switch's report entry is a SwitchEffect: one that is off says only why,
// one that is on says whether it took effect and how; read back strictly,
// naming the path of a key it does not know.
TEST(Switches, AnEffectWritesWhatItHoldsAndReadsBackStrictly) {
  const SwitchEffects effects = {{"flash", SwitchEffect::on(true, "sdpa", "flash ran")},
                                 {"cuda-graph", SwitchEffect::cannot_act("none", "CUDA only")},
                                 {"ddp", SwitchEffect::off("not in this rung")}};
  const nlohmann::json j = fields::to_json(effects);
  EXPECT_EQ(j["ddp"], nlohmann::json({{"enabled", false}, {"reason", "not in this rung"}}));
  EXPECT_EQ(j["flash"],
            nlohmann::json({{"enabled", true}, {"effective", true}, {"mechanism", "sdpa"}, {"reason", "flash ran"}}));
  EXPECT_EQ(j["cuda-graph"]["applicable"], false);
  const auto read = fields::from_json<SwitchEffects>(j, "report.json: switches");
  EXPECT_TRUE(took_effect(read, "flash"));
  EXPECT_FALSE(took_effect(read, "cuda-graph"));
  EXPECT_TRUE(read.at("cuda-graph").inapplicable());
  EXPECT_FALSE(took_effect(read, "ddp"));
  EXPECT_FALSE(took_effect(read, "no-such-switch"));
  nlohmann::json typo = j;
  typo["flash"]["sdpa_backnd"] = "flash";
  try {
    fields::from_json<SwitchEffects>(typo, "report.json: switches");
    ADD_FAILURE() << "an unknown key was read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("report.json: switches.flash.sdpa_backnd"), std::string::npos) << e.what();
  }
  // A switch that is on must say whether it took effect, and how.
  const nlohmann::json schema = fields::schema_of<SwitchEffect>();
  EXPECT_EQ(schema["if"]["properties"]["enabled"]["const"], true);
  EXPECT_EQ(schema["then"]["required"], nlohmann::json({"effective", "mechanism"}));
}

// The docs' switch table is the declarations' (`ladder switches`).
TEST(Switches, VariantsReadmeShowsTheDeclaredTable) {
  std::ifstream in(std::string(LADDER_SOURCE_DIR) + "/variants/README.md");
  ASSERT_TRUE(in) << "variants/README.md";
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(readme.find(switches_markdown()), std::string::npos)
      << "variants/README.md does not hold `ladder switches`'s table; it should be:\n" << switches_markdown();
}

}  // namespace
}  // namespace ladder
