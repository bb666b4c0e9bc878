// tests/variants/test_gemm_plan.cpp: the GEMM planner (variants/planners/gemm_plan.h,
// variants/planners/gemm_candidates.h) without a GPU: the choice under a fake timer
// (never slower than PyTorch's ops plus the margin), the interleaving, the
// plan's JSON and its errors, the cache key and the cache, --gemm-plan, and
// the plan a CPU step records. The CUDA candidates' timings need a GPU.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "profiler/common/config_error.h"
#include "tests/support/cache_dir.h"
#include "tests/support/tiny_step.h"
#include "variants/planners/gemm_candidates.h"
#include "variants/planners/gemm_plan.h"

namespace ladder {
namespace {

CandidateResult measured(GemmChoice c, double median) {
  CandidateResult r;
  r.choice = c;
  r.ran = true;
  r.median_ms = median;
  return r;
}

TEST(GemmPlan, ChoiceLabelsRoundTrip) {
  for (const char* label : {"pytorch", "lt#0", "lt#7", "lt-split-bias#2", "lt-into-grad#0", "lt-into-grad-bgradb#3"}) {
    const auto c = parse_choice(label);
    ASSERT_TRUE(c) << label;
    EXPECT_EQ(c->label(), label);
  }
  EXPECT_EQ(parse_choice("lt")->label(), "lt#0");
  for (const char* bad : {"", "cublas", "pytorch#1", "lt#", "lt#x", "lt#1234", "lt-split-bias#-1"})
    EXPECT_FALSE(parse_choice(bad)) << bad;
}

TEST(GemmPlan, MethodsApplyToTheirRoles) {
  EXPECT_TRUE(method_applies(GemmMethod::kLt, GemmRole::kForwardBias, false));
  EXPECT_FALSE(method_applies(GemmMethod::kLtSplitBias, GemmRole::kForwardBiasGelu, true));
  EXPECT_TRUE(method_applies(GemmMethod::kLtSplitBias, GemmRole::kWeightBiasGrad, false));
  EXPECT_FALSE(method_applies(GemmMethod::kLtSplitBias, GemmRole::kInputGradDgelu, false));  // no bias there
  EXPECT_FALSE(method_applies(GemmMethod::kLtIntoGrad, GemmRole::kWeightBiasGrad, false));  // no flat buffer
  EXPECT_TRUE(method_applies(GemmMethod::kLtIntoGrad, GemmRole::kWeightBiasGrad, true));
  EXPECT_FALSE(method_applies(GemmMethod::kLtIntoGrad, GemmRole::kInputGradDgelu, true));
  EXPECT_FALSE(method_applies(GemmMethod::kLtIntoGradBgradb, GemmRole::kWeightBiasGrad, false));
  EXPECT_TRUE(method_applies(GemmMethod::kLtIntoGradBgradb, GemmRole::kWeightBiasGrad, true));
  EXPECT_FALSE(method_applies(GemmMethod::kLtIntoGradBgradb, GemmRole::kForwardBias, true));
  // oneDNN (G) is offered at every GEMM, weight gradients too (planner 5), with or without the buffer.
  for (GemmRole role : {GemmRole::kForward, GemmRole::kInputGrad, GemmRole::kWeightGrad, GemmRole::kWeightBiasGrad})
    for (bool into : {false, true}) EXPECT_TRUE(method_applies(GemmMethod::kOnednn, role, into));
}

// Every method has a name that parses back to it, A first (the planner
// tries them in this order).
TEST(GemmPlan, EveryMethodNamedOnce) {
  std::set<std::string> names;
  for (GemmMethod m : kGemmMethods) {
    names.insert(method_name(m));
    EXPECT_EQ(parse_method(method_name(m)), m) << method_name(m);
  }
  EXPECT_EQ(names.size(), std::size(kGemmMethods));
  EXPECT_EQ(kGemmMethods[0], GemmMethod::kPytorch);
}

// A call that did not run as its choice asked is never timed or checked as
// that choice: cuBLASLt that did not run, D or E given a buffer that their
// GEMM did not go into (their fallback's kernels ran).
TEST(GemmPlan, CallNotAsAskedSaysWhy) {
  gemm::Outcome cpu;  // nothing ran on cuBLASLt, no reason given: a CPU
  EXPECT_EQ(gemm::not_as_asked({GemmMethod::kLt, 0}, cpu, false), "cuBLASLt did not run: it is CUDA only");
  EXPECT_EQ(gemm::not_as_asked({}, cpu, false), "") << "PyTorch's ops ran as asked";
  gemm::Outcome fell;  // D's GEMM into the buffer refused: C ran
  fell.lt = true;
  fell.why = "NOT_SUPPORTED";
  const GemmChoice d{GemmMethod::kLtIntoGrad, 0}, e{GemmMethod::kLtIntoGradBgradb, 1};
  EXPECT_EQ(gemm::not_as_asked(d, fell, true), "cuBLASLt has no algorithm for dW into the fp32 buffer: NOT_SUPPORTED");
  EXPECT_NE(gemm::not_as_asked(e, fell, true), "");
  EXPECT_EQ(gemm::not_as_asked(d, fell, false), "") << "without a buffer D runs as C by design";
  fell.into_grad = true;
  EXPECT_EQ(gemm::not_as_asked(e, fell, true), "");
  EXPECT_EQ(gemm::not_as_asked({GemmMethod::kLt, 2}, fell, true), "");
}

TEST(GemmPlan, ChoiceKeepsPytorchUnlessFasterByTheMargin) {
  std::string why;
  const std::vector<CandidateResult> close = {measured({}, 1.0), measured({GemmMethod::kLt, 0}, 0.98)};
  EXPECT_EQ(choose_candidate(close, 0.03, &why), 0u);
  EXPECT_NE(why.find("lt#0 not chosen, within the margin"), std::string::npos) << why;
  const std::vector<CandidateResult> faster = {measured({}, 1.0), measured({GemmMethod::kLt, 0}, 0.99),
                                               measured({GemmMethod::kLtSplitBias, 3}, 0.90)};
  EXPECT_EQ(choose_candidate(faster, 0.03, &why), 2u);
  EXPECT_EQ(why, "lt-split-bias#3 chosen: 0.9000 ms against pytorch's 1.0000 ms (-10.0 %, margin 3 %)");
  std::vector<CandidateResult> unavailable = {measured({}, 1.0), measured({GemmMethod::kLt, 1}, 0.1)};
  unavailable[1].ran = false;  // a candidate that did not run is never chosen, whatever its figure
  EXPECT_EQ(choose_candidate(unavailable, 0.03, &why), 0u);
  EXPECT_EQ(why, "pytorch kept: fastest (1.0000 ms)");
  EXPECT_THROW(choose_candidate({measured({GemmMethod::kLt, 0}, 1.0)}, 0.03, nullptr), std::logic_error);
}

// A fake device: each candidate has a true time and every timing adds noise;
// the timer sees only what the candidate's call set. The plan's choice, at
// every site and seed, is never slower than A's median less the margin.
TEST(GemmPlan, MeasuredPlanUnderAFakeTimer) {
  const ModelConfig gpt2;
  const auto sites = gemm_sites(gpt2, 16 * 1024);
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> speed(0.8, 1.2), noise(0.97, 1.03);
    double now_true = 0;  // the true time of the candidate the last call ran
    std::vector<std::string> order;
    const CandidateSource source = [&](const GemmSite& s) {
      std::vector<RunnableCandidate> out;
      const GemmChoice choices[] = {{}, {GemmMethod::kLt, 0}, {GemmMethod::kLt, 1}, {GemmMethod::kLtSplitBias, 0}};
      for (const GemmChoice& c : choices) {
        RunnableCandidate rc;
        rc.result.choice = c;
        rc.result.ran = method_applies(c.method, s.role, false);
        if (!rc.result.ran) rc.result.why_not = "does not apply";
        const double t = c.uses_lt() ? speed(rng) : 1.0;
        rc.run = [&now_true, &order, t, c] {
          now_true = t;
          order.push_back(c.label());
        };
        out.push_back(rc);
      }
      return out;
    };
    const CandidateTimer timer = [&](const std::function<void()>& fn) {
      fn();
      return now_true * noise(rng);
    };
    const GemmPlan plan = measure_plan(sites, GemmPlanKey{}, source, timer, 0.03, 10);
    ASSERT_EQ(plan.sites.size(), sites.size());
    for (const auto& sp : plan.sites) {
      const auto& a = sp.candidates.at(0);
      ASSERT_EQ(a.choice.label(), "pytorch");
      ASSERT_EQ(a.ms.size(), 10u);
      const auto chosen = std::find_if(sp.candidates.begin(), sp.candidates.end(),
                                       [&](const CandidateResult& c) { return c.choice == sp.choice; });
      ASSERT_NE(chosen, sp.candidates.end());
      EXPECT_TRUE(chosen->ran);
      if (!(sp.choice == GemmChoice{})) {
        EXPECT_LT(chosen->median_ms, a.median_ms * (1 - 0.03)) << sp.reason;
      }
      for (const auto& c : sp.candidates) {
        EXPECT_EQ(c.ms.size(), c.ran ? 10u : 0u) << c.choice.label();
        if (c.ran) {
          EXPECT_LE(c.median_ms, *std::max_element(c.ms.begin(), c.ms.end()));
        }
      }
    }
    // Interleaved: after the untimed first call of each, the first repetition runs A first, the second
    // starts one later (forward sites have A, lt#0, lt#1: three candidates).
    ASSERT_GE(order.size(), 9u);
    EXPECT_EQ(std::vector<std::string>(order.begin() + 3, order.begin() + 9),
              (std::vector<std::string>{"pytorch", "lt#0", "lt#1", "lt#0", "lt#1", "pytorch"}));
  }
}

GemmPlan small_plan() {
  const ModelConfig m{2, 2, 64, 32, 100};
  GemmPlanKey key;
  key.device = "NVIDIA H100 80GB HBM3";
  key.cublaslt = "130100";
  key.torch = "2.11.0";
  key.dtype = "bf16";
  key.n_embd = 64;
  key.n_layer = 2;
  key.rows = 128;
  key.into_grad = true;
  GemmPlan p = pinned_plan(gemm_sites(m, 128), key, GemmMethod::kPytorch, "auto");
  p.sites[4].choice = {GemmMethod::kLtIntoGrad, 2};
  p.sites[6].choice = {GemmMethod::kLtSplitBias, 1};  // mlp.c_fc/weight+bias grad
  p.sites[4].candidates = {measured({}, 0.5), measured({GemmMethod::kLtIntoGrad, 2}, 0.25)};
  p.sites[4].candidates[1].algo = {{"rank", 2}, {"tile", "128x128"}, {"splitk", 4}};
  p.workspace_bytes = 32 << 20;
  return p;
}

TEST(GemmPlan, JsonRoundTrip) {
  const GemmPlan p = small_plan();
  const GemmPlan back = GemmPlan::from_json(p.to_json(), "test");
  EXPECT_EQ(back.to_json(), p.to_json());
  EXPECT_EQ(back.choice_for("mlp.c_proj", GemmRole::kWeightBiasGrad).label(), "lt-into-grad#2");
  EXPECT_EQ(back.choice_for("mlp.c_fc", GemmRole::kWeightBiasGrad).label(), "lt-split-bias#1");
  EXPECT_EQ(back.choice_for("mlp.c_proj", GemmRole::kInputGradDgelu).label(), "pytorch");
  EXPECT_EQ(back.choice_for("attn.c_attn", GemmRole::kForwardBias).label(), "pytorch");
  EXPECT_EQ(back.choice_for("no.such", GemmRole::kForwardBias).label(), "pytorch");
  const auto j = p.to_json();
  EXPECT_EQ(j["sites"][4]["site"], "mlp.c_proj/weight+bias grad");
  EXPECT_EQ(j["sites"][4]["epilogue"], "BGRADB");
  EXPECT_EQ(j["sites"][4]["candidates"][1]["algo"]["splitk"], 4);
}

void expect_config_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// The plan's JSON against report.gemm_plan in reports/rung_report.schema.json
// (generated from variants/planners/gemm_plan_section.h): at every level, each key
// written is declared and each required key written.
void expect_matches_schema(const nlohmann::json& value, const nlohmann::json& schema, const std::string& where) {
  if (!value.is_object() || !schema.contains("properties")) return;
  const auto& props = schema.at("properties");
  for (const auto& [key, v] : value.items()) {
    ASSERT_TRUE(props.contains(key)) << where << "/" << key << " is not in the schema";
    const auto& sub = props.at(key);
    if (v.is_object()) expect_matches_schema(v, sub, where + "/" + key);
    if (v.is_array() && sub.contains("items"))
      for (size_t i = 0; i < v.size(); ++i)
        expect_matches_schema(v[i], sub.at("items"), fmt::format("{}/{}/{}", where, key, i));
  }
  for (const auto& r : schema.value("required", nlohmann::json::array()))
    EXPECT_TRUE(value.contains(r.get<std::string>())) << where << " lacks required " << r;
}

TEST(GemmPlan, JsonMatchesTheReportSchema) {
  const auto schema = nlohmann::json::parse(std::ifstream(std::filesystem::path(LADDER_FIXTURES_DIR) / ".." / ".." /
                                                          "reports" / "rung_report.schema.json"));
  const auto& node = schema.at("properties").at("gemm_plan");
  GemmPlan p = small_plan();
  p.sites[4].candidates.push_back(CandidateResult{{GemmMethod::kLt, 7}, false, "the heuristic offers 3", {}, 0, {}});
  expect_matches_schema(p.to_json(), node, "gemm_plan");
  const auto& site_props = node.at("properties").at("sites").at("items").at("properties");
  const std::regex choice(site_props.at("choice").at("pattern").get<std::string>());
  for (const auto& s : p.to_json().at("sites")) {
    EXPECT_TRUE(std::regex_match(s.at("choice").get<std::string>(), choice)) << s.at("choice");
    for (const auto& c : s.at("candidates")) EXPECT_TRUE(std::regex_match(c.at("choice").get<std::string>(), choice));
  }
}

TEST(GemmPlan, BadPlansSayTheFieldAndWhatWasExpected) {
  auto j = small_plan().to_json();
  j["sites"][1].erase("in");
  expect_config_error([&] { GemmPlan::from_json(j, "plan.json"); }, {"plan.json", "/sites/1/in", "missing"});
  j = small_plan().to_json();
  j["sites"][0]["choice"] = "cublas#1";
  expect_config_error([&] { GemmPlan::from_json(j, "plan.json"); },
                      {"plan.json", "/sites/0/choice", "\"cublas#1\"", "pytorch, lt#R"});
  j = small_plan().to_json();
  j["key"]["rows"] = "many";
  expect_config_error([&] { GemmPlan::from_json(j, "plan.json"); }, {"/key/rows", "\"many\"", "an integer"});
}

TEST(GemmPlan, FilePlanMustFitTheRunsSites) {
  const GemmPlan file = small_plan();
  const ModelConfig m{2, 2, 64, 32, 100};
  const GemmPlan same = plan_from_file(file, "p.json", gemm_sites(m, 128), file.key);
  EXPECT_EQ(same.choice_for("mlp.c_proj", GemmRole::kWeightBiasGrad).label(), "lt-into-grad#2");
  EXPECT_EQ(same.source, "file: p.json");
  GemmPlanKey other = file.key;
  other.device = "NVIDIA A100-SXM4-80GB";
  EXPECT_NE(plan_from_file(file, "p.json", gemm_sites(m, 128), other).source.find("measured for"),
            std::string::npos);  // another GPU may rerun it: the source says so
  expect_config_error([&] { plan_from_file(file, "p.json", gemm_sites(m, 256), file.key); },
                      {"--gemm-plan p.json", "attn.c_attn/forward", "m192 n128 k64", "m192 n256 k64"});
  auto without_cfc = file;  // a planner-2 plan: c_fc's weight gradient was no site
  without_cfc.sites.erase(without_cfc.sites.begin() + 6);
  expect_config_error([&] { plan_from_file(without_cfc, "p.json", gemm_sites(m, 128), file.key); },
                      {"--gemm-plan p.json", "without mlp.c_fc/weight+bias grad"});
  other = file.key;
  other.into_grad = false;  // lt-into-grad needs the flat buffer
  expect_config_error([&] { plan_from_file(file, "p.json", gemm_sites(m, 128), other); },
                      {"mlp.c_proj/weight+bias grad's choice", "lt-into-grad#2", "flat-grads"});
}

TEST(GemmPlan, KeyIdTellsEveryFieldApart) {
  const GemmPlanKey base = small_plan().key;
  EXPECT_EQ(base.id(), GemmPlanKey(base).id());
  EXPECT_EQ(base.id().rfind("nvidia-h100-80gb-hbm3-", 0), 0u) << base.id();
  std::vector<GemmPlanKey> variants(10, base);
  variants[0].device = "NVIDIA H200";
  variants[1].cublaslt = "130000";
  variants[2].torch = "2.10.0";
  variants[3].dtype = "fp32";
  variants[4].n_embd = 128;
  variants[5].n_layer = 3;
  variants[6].rows = 256;
  variants[7].gelu_epilogue = false;
  variants[8].into_grad = false;
  variants[9].planner = 1;
  std::set<std::string> ids = {base.id()};
  for (const auto& v : variants) ids.insert(v.id());
  EXPECT_EQ(ids.size(), 11u);
  EXPECT_EQ(GemmPlanKey::from_json(base.to_json(), "k"), base);
  EXPECT_EQ(base.planner, kGemmPlannerVersion);
}

// A plan recorded before the planner had a version (the 2026-11-27 H100's)
// reads as version 1: a file can still pin it, and a cached one of version 1
// is measured again by this planner.
TEST(GemmPlan, PlanWithoutAVersionIsTheFirstPlanners) {
  CacheDir cache;
  GemmPlan p = small_plan();
  auto j = p.to_json();
  j["key"].erase("planner");
  const GemmPlan old = GemmPlan::from_json(j, "old.json");
  EXPECT_EQ(old.key.planner, 1);
  EXPECT_EQ(old.choice_for("mlp.c_proj", GemmRole::kWeightBiasGrad).label(), "lt-into-grad#2");
  save_cached_plan(old);
  EXPECT_TRUE(load_cached_plan(old.key));
  EXPECT_FALSE(load_cached_plan(p.key)) << "a plan of planner 1 was taken for planner " << kGemmPlannerVersion;
  expect_config_error([&] { j["key"]["planner"] = "two"; GemmPlan::from_json(j, "bad.json"); },
                      {"bad.json", "/key/planner", "\"two\"", "an integer"});
}

// At a weight-gradient site the planner times each candidate with dW landing
// in the fp32 buffer, as the step with flat-grads runs it: A (and B, C) add
// their dW into o.grad after the GEMM; without a buffer nothing is added.
TEST(GemmPlan, TimedWeightGradLandsInTheBuffer) {
  const ModelConfig m{1, 1, 16, 16, 20};
  for (const GemmSite& s : gemm_sites(m, 32)) {
    if (s.role != GemmRole::kWeightBiasGrad) continue;
    auto o = gemm::draw_operands(s, torch::kCPU, torch::kBFloat16, 3);
    ASSERT_TRUE(o.grad.defined() && o.grad.scalar_type() == torch::kFloat) << s.name();
    o.grad.fill_(0.5);
    gemm::call_site(s, o, {});
    gemm::call_site(s, o, {});
    const auto dw = o.dy.t().mm(o.x).to(torch::kFloat);  // PyTorch's bf16 dW, as the step adds it
    EXPECT_TRUE(torch::allclose(o.grad, 0.5 + 2 * dw, 1e-5, 1e-5)) << s.name();
    o.grad = torch::Tensor();
    EXPECT_NO_THROW(gemm::call_site(s, o, {})) << s.name();  // dW back through autograd: no buffer
  }
}

TEST(GemmPlan, CacheKeepsAPlanPerKey) {
  CacheDir cache;
  EXPECT_EQ(gemm_plan_cache_dir(), cache.dir / "gemm-plans");
  GemmPlan p = small_plan();
  EXPECT_FALSE(load_cached_plan(p.key));
  save_cached_plan(p);
  const auto back = load_cached_plan(p.key);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->choice_for("mlp.c_fc", GemmRole::kWeightBiasGrad).label(), "lt-split-bias#1");
  EXPECT_EQ(back->source, "cache: " + (cache.dir / "gemm-plans" / (p.key.id() + ".json")).string());
  GemmPlanKey other = p.key;
  other.rows = 64;
  EXPECT_FALSE(load_cached_plan(other));  // another shape: measured again
  std::ofstream(cache.dir / "gemm-plans" / (p.key.id() + ".json")) << "{ damaged";
  EXPECT_FALSE(load_cached_plan(p.key));  // a damaged entry is measured again, not an error
}

TEST(GemmPlan, RequestParsesModesAndFiles) {
  EXPECT_EQ(parse_gemm_plan_request("auto").mode, "auto");
  EXPECT_EQ(parse_gemm_plan_request("pytorch").mode, "pytorch");
  EXPECT_EQ(parse_gemm_plan_request("lt").mode, "lt");
  expect_config_error([] { parse_gemm_plan_request(""); }, {"--gemm-plan", "expected auto, pytorch, lt"});
  expect_config_error([] { parse_gemm_plan_request("/no/such/plan.json"); },
                      {"--gemm-plan /no/such/plan.json", "cannot read"});
  CacheDir tmp;
  std::filesystem::create_directories(tmp.dir);
  const auto report = tmp.dir / "report.json";
  std::ofstream(report) << nlohmann::json{{"rung", "fused"}, {"gemm_plan", small_plan().to_json()}}.dump();
  const GemmPlanRequest r = parse_gemm_plan_request(report.string());
  EXPECT_EQ(r.mode, "file");
  EXPECT_EQ(r.plan.choice_for("mlp.c_proj", GemmRole::kWeightBiasGrad).label(),
            "lt-into-grad#2");
  const auto no_plan = tmp.dir / "fp32.json";
  std::ofstream(no_plan) << nlohmann::json{{"rung", "fp32"}, {"gemm_plan", nullptr}}.dump();
  expect_config_error([&] { parse_gemm_plan_request(no_plan.string()); }, {"/gemm_plan", "null"});
}

// On a CPU the fused rung plans every GEMM of its step (step_sites), in
// fp32 here: F at each weight gradient (the flat buffer is there), PyTorch's
// ops alone elsewhere; measured once, then from the cache. An unfused rung
// has no plan.
TEST(GemmPlan, CpuStepPlansEveryGemmOfTheStep) {
  CacheDir cache;
  const auto fp32_matmuls = [](RunConfig& c) { c.cpu_bf16 = "off"; };
  auto step = tiny_cpu_step("fused", fp32_matmuls);
  const auto plan = fields::to_json(step->describe_gemm_plan());
  ASSERT_TRUE(plan.is_object());
  EXPECT_EQ(plan["mode"], "auto");
  EXPECT_EQ(plan["source"], "measured");
  EXPECT_EQ(plan["margin"], kGemmPlanMarginCpu);
  EXPECT_EQ(plan["key"]["device"].get<std::string>().rfind("cpu: ", 0), 0u) << plan["key"];
  EXPECT_EQ(plan["key"]["vocab"], 1000) << "tiny's vocabulary (fused is below vocab-pad)";
  const auto sites = step_sites(config_for("tiny", Overrides{}, "cpu").model, plan["key"]["rows"].get<int64_t>(), 1000);
  ASSERT_EQ(plan["sites"].size(), sites.size());
  EXPECT_EQ(sites.size(), 15u);  // 4 linears x 3 products, and the classifier's 3
  std::map<std::string, std::set<std::string>> offered;
  for (size_t i = 0; i < sites.size(); ++i) {
    const auto& sp = plan["sites"][i];
    ASSERT_EQ(sp["site"], sites[i].name());
    std::set<std::string> labels;
    for (const auto& c : sp["candidates"]) {
      EXPECT_TRUE(c["ran"].get<bool>()) << sp["site"] << " " << c;
      EXPECT_EQ(c["ms"].size(), size_t(kGemmPlanReps));
      labels.insert(c["choice"].get<std::string>());
    }
    EXPECT_TRUE(labels.count(sp["choice"].get<std::string>())) << sp["site"];
    offered[sp["site"].get<std::string>()] = labels;
  }
  // G (oneDNN) at every GEMM, F at every weight gradient besides.
  const std::set<std::string> ag = {"pytorch", "onednn"}, afg = {"pytorch", "into-grad", "onednn"};
  EXPECT_EQ(offered["attn.c_attn/forward"], ag);
  EXPECT_EQ(offered["mlp.c_proj/input grad+dgelu"], ag);
  EXPECT_EQ(offered["attn.c_attn/input grad"], ag);
  EXPECT_EQ(offered["attn.c_attn/weight+bias grad"], afg);
  EXPECT_EQ(offered["lm_head/weight grad"], afg);
  EXPECT_EQ(offered["lm_head/forward"], ag);
  EXPECT_EQ(offered["lm_head/input grad"], ag);
  // The next step of the same shape reads the cache.
  const auto again = fields::to_json(tiny_cpu_step("fused", fp32_matmuls)->describe_gemm_plan());
  EXPECT_EQ(again["source"].get<std::string>().rfind("cache: ", 0), 0u) << again["source"];
  EXPECT_FALSE(tiny_cpu_step("fp32")->describe_gemm_plan().has_value());  // no fused linears
}

// Every candidate a CPU offers, at every GEMM of gpt2-124m's step (64 rows,
// the padded vocabulary), matches PyTorch's ops computed in fp64: each
// output within 1e-4 (the probe's own check is 5e-3 in relative L2). In bf16
// F does not run: addmm_ takes one dtype and the buffer is fp32.
TEST(GemmPlan, CpuCandidatesMatchPytorchAtGpt2Widths) {
  const ModelConfig m;  // gpt2-124m widths, few rows
  int checked = 0;
  for (const GemmSite& s : step_sites(m, 64, 50304)) {
    const auto o = gemm::draw_operands(s, torch::kCPU, torch::kFloat, 7);
    const auto want = gemm::run_site(s, gemm::to_double(o), {});
    for (const auto& c : gemm::site_candidates(s, o, torch::kCPU, true)) {
      ASSERT_TRUE(c.result.ran) << s.name() << " " << c.result.choice.label() << ": " << c.result.why_not;
      auto fresh = gemm::draw_operands(s, torch::kCPU, torch::kFloat, 7);  // F adds into a clean buffer
      const auto got = gemm::run_site(s, fresh, c.result.choice);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_TRUE(torch::allclose(got[i].to(torch::kDouble), want[i], 1e-4, 1e-4))
            << s.name() << " " << c.result.choice.label() << " output " << i;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 15 + 5 + 15);  // A and G everywhere, F at the five weight gradients
  const GemmSite dw = step_sites(m, 64, 50304, true)[7];
  ASSERT_EQ(dw.name(), "mlp.c_proj/weight+bias grad");
  const auto bf16 = gemm::draw_operands(dw, torch::kCPU, torch::kBFloat16, 7);
  const auto c = gemm::site_candidates(dw, bf16, torch::kCPU, true);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[1].result.choice.method, GemmMethod::kIntoGrad);
  EXPECT_FALSE(c[1].result.ran);
  EXPECT_NE(c[1].result.why_not.find("takes fp32 operands"), std::string::npos) << c[1].result.why_not;
  EXPECT_EQ(c[2].result.choice.method, GemmMethod::kOnednn);  // G runs in bf16, within bf16's check
  EXPECT_TRUE(c[2].result.ran) << c[2].result.why_not;
}

// A CPU plan's wider margin: F 4 % faster than A is noise there, 8 % a choice.
TEST(GemmPlan, CpuMarginUnderAFakeTimer) {
  const ModelConfig m{1, 1, 16, 16, 20};
  const auto sites = step_sites(m, 32, 20);
  for (const double f_time : {0.96, 0.92}) {
    double now = 0;
    const CandidateSource source = [&](const GemmSite& s) {
      std::vector<RunnableCandidate> out;
      for (GemmMethod meth : kGemmMethods) {
        if (!method_on_device(meth, false) || !method_applies(meth, s.role, true)) continue;
        RunnableCandidate rc;
        rc.result.choice = {meth, 0};
        rc.result.ran = true;
        const double t = meth == GemmMethod::kPytorch ? 1.0 : f_time;
        rc.run = [&now, t] { now = t; };
        out.push_back(rc);
      }
      return out;
    };
    const CandidateTimer timer = [&](const std::function<void()>& fn) { return fn(), now; };
    const GemmPlan plan = measure_plan(sites, GemmPlanKey{}, source, timer, kGemmPlanMarginCpu, 10);
    for (const auto& sp : plan.sites) {
      const bool has_other = sp.candidates.size() > 1;
      const std::string want = !has_other || f_time > 1 - kGemmPlanMarginCpu ? "pytorch" : sp.candidates[1].choice.label();
      EXPECT_EQ(sp.choice.label(), want) << sp.site.name() << " at " << f_time << ": " << sp.reason;
    }
  }
}

// A CPU plan reads back from its JSON: the classifier's "forward" (no bias,
// epilogue DEFAULT) is another role than a linear's "forward" (BIAS), and F
// carries no algorithm's rank.
TEST(GemmPlan, CpuPlanRoundTripsThroughJson) {
  const ModelConfig m{2, 2, 64, 32, 100};
  GemmPlanKey key;
  key.device = "cpu: Test CPU, 2 threads";
  key.dtype = "fp32";
  key.n_embd = 64;
  key.n_layer = 2;
  key.rows = 64;
  key.vocab = 128;
  key.into_grad = true;
  GemmPlan p = pinned_plan(step_sites(m, 64, 128), key, GemmMethod::kPytorch, "auto");
  for (auto& sp : p.sites) {
    if (sp.site.role == GemmRole::kWeightGrad || sp.site.role == GemmRole::kWeightBiasGrad)
      sp.choice = {GemmMethod::kIntoGrad, 0};
  }
  const GemmPlan back = GemmPlan::from_json(nlohmann::json::parse(p.to_json().dump()), "cpu.json");
  EXPECT_EQ(back.to_json(), p.to_json());
  EXPECT_EQ(back.key.vocab, 128);
  EXPECT_EQ(back.choice_for("lm_head", GemmRole::kForward).label(), "pytorch");
  EXPECT_EQ(back.choice_for("attn.c_attn", GemmRole::kForwardBias).label(), "pytorch");
  EXPECT_EQ(back.choice_for("lm_head", GemmRole::kWeightGrad).label(), "into-grad");
  EXPECT_FALSE(parse_choice("into-grad#1")) << "F has no algorithm's rank";
  // A file's F at a run without the flat buffer is refused, naming the site.
  GemmPlanKey no_buffer = key;
  no_buffer.into_grad = false;
  expect_config_error([&] { plan_from_file(back, "cpu.json", step_sites(m, 64, 128), no_buffer); },
                      {"cpu.json", "lm_head/weight grad", "into-grad", "need flat-grads"});
  // Another vocabulary is another shape at the classifier's sites.
  expect_config_error([&] { plan_from_file(back, "cpu.json", step_sites(m, 64, 256), key); },
                      {"cpu.json", "lm_head/forward", "this run's shape"});
  GemmPlanKey cuda = key;
  cuda.vocab = 0;
  EXPECT_FALSE(cuda.to_json().contains("vocab")) << "a CUDA key's JSON is as before";
  // And the schema knows the CPU plan's roles, epilogues, choices and key.
  const auto schema = nlohmann::json::parse(std::ifstream(std::filesystem::path(LADDER_FIXTURES_DIR) / ".." / ".." /
                                                          "reports" / "rung_report.schema.json"));
  const auto& node = schema.at("properties").at("gemm_plan");
  expect_matches_schema(p.to_json(), node, "gemm_plan");
  const auto& site = node.at("properties").at("sites").at("items").at("properties");
  const std::regex choice(site.at("choice").at("pattern").get<std::string>());
  for (const auto& sp : p.to_json().at("sites")) {
    EXPECT_TRUE(std::regex_match(sp.at("choice").get<std::string>(), choice)) << sp.at("choice");
    EXPECT_NE(std::find(site.at("role").at("enum").begin(), site.at("role").at("enum").end(), sp.at("role")),
              site.at("role").at("enum").end()) << sp.at("role");
    EXPECT_NE(std::find(site.at("epilogue").at("enum").begin(), site.at("epilogue").at("enum").end(),
                        sp.at("epilogue")), site.at("epilogue").at("enum").end()) << sp.at("epilogue");
  }
}

}  // namespace
}  // namespace ladder
