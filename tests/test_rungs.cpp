// tests/test_rungs.cpp: the ladder is data: each rung adds exactly one
// switch; names parse; ablation produces the expected set; the matrix
// resolves cells and rejects bad configurations.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <memory>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/matrix.h"
#include "variants/config.h"
#include "variants/rungs.h"
#include "variants/step.h"
#include "variants/switches/switch.h"

namespace ladder {
namespace {

// How many switch flags are on (a group's parts each count).
int count_on(const Switches& s) {
  int n = 0;
  for (const SwitchDecl* info : all_switches()) n += info->member && s.*info->member;
  return n;
}

// The flags one declaration sets: its own, or its parts'.
int flags_of(const SwitchDecl& s) { return s.member ? 1 : int(parts_of(s).size()); }

TEST(Rungs, LadderOrderAndEachRungAddsOneDeclaredSwitch) {
  const auto& l = ladder_rungs();
  std::vector<std::string> names;
  for (const auto& r : l) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fp32", "tf32", "bf16", "fused", "flash", "vocab-pad",
                                             "fused-adamw", "grad-accum", "ddp"}));
  EXPECT_EQ(count_on(l[0].sw), 0);
  for (size_t i = 1; i < l.size(); ++i) {
    const SwitchDecl& added = switch_named(l[i].name);
    EXPECT_TRUE(l[i].sw.on(added)) << l[i].name;
    EXPECT_EQ(count_on(l[i].sw), count_on(l[i - 1].sw) + flags_of(added)) << l[i].name;
    // Everything the previous rung had is still on.
    for (const SwitchDecl* info : all_switches())
      if (l[i - 1].sw.on(*info)) {
        EXPECT_TRUE(l[i].sw.on(*info)) << l[i].name << " dropped " << info->name;
      }
  }
  EXPECT_EQ(flags_of(switch_named("fused")), 8);
  EXPECT_TRUE(rung_runnable(l.back(), "cpu"));  // ddp runs on Gloo
#ifdef LADDER_WITH_NCCL
  EXPECT_TRUE(rung_runnable(l.back(), "cuda"));
#else
  std::string why;
  EXPECT_FALSE(rung_runnable(l.back(), "cuda", &why));
  EXPECT_NE(why.find("NCCL"), std::string::npos);
#endif
}

TEST(Rungs, ParsesAblationSpecsAndRejectsUnknownNames) {
  const Rung solo = parse_rung("fp32+flash+fused-adamw");
  EXPECT_TRUE(solo.sw.flash && solo.sw.fused_adamw);
  EXPECT_EQ(count_on(solo.sw), 2);
  const Rung top = parse_rung("top-bf16");
  EXPECT_FALSE(top.sw.bf16);
  EXPECT_FALSE(top.sw.ddp);
  EXPECT_EQ(count_on(top.sw), 13);  // 15 flags, without bf16 and ddp
  const Rung no_graph = parse_rung("top-cuda-graph");
  EXPECT_TRUE(no_graph.sw.on("fused-ln") && !no_graph.sw.cuda_graph && !no_graph.sw.on("fused"));
  EXPECT_EQ(no_graph.varies, &switch_named("cuda-graph"));
  std::string why;
  EXPECT_FALSE(rung_runnable(no_graph, "cpu", &why));
  EXPECT_NE(why.find("cuda-graph is CUDA only"), std::string::npos) << why;
  EXPECT_TRUE(rung_runnable(no_graph, "cuda:0"));
  EXPECT_TRUE(rung_runnable(parse_rung("top-fused-ln"), "cpu"));
  EXPECT_THROW(parse_rung("turbo"), ConfigError);
  EXPECT_THROW(parse_rung("fp32+warp"), ConfigError);
  EXPECT_THROW(parse_rung("top-ddp"), ConfigError);
  try {
    parse_rung("turbo", "--rungs");
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--rungs: 'turbo'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("vocab-pad"), std::string::npos) << e.what();
  }
}

TEST(Rungs, AblationModeProducesEachSwitchAloneAndLeftOut) {
  std::vector<std::string> names;
  for (const auto& r : ablation_rungs()) names.push_back(r.name);
  // Every switch alone on fp32 where it needs no other, every part of fused
  // too; then the top rung without each.
  EXPECT_EQ(names, (std::vector<std::string>{
                       "fp32", "fp32+tf32", "fp32+bf16", "fp32+fused", "fp32+fused-ln", "fp32+fused-linear",
                       "fp32+fused-ce", "fp32+flat-grads", "fp32+flash", "fp32+vocab-pad", "fp32+fused-adamw",
                       "fp32+grad-accum", "top", "top-tf32", "top-bf16", "top-fused", "top-fused-ln",
                       "top-fused-linear", "top-lt-epilogues", "top-gelu-epilogue", "top-fused-ce",
                       "top-flat-grads", "top-cuda-graph", "top-adamw-clip", "top-flash", "top-vocab-pad", "top-fused-adamw",
                       "top-grad-accum"}));
  MatrixSpec spec;
  spec.device = "cpu";
  spec.presets = {"tiny"};
  spec.mode = "ablation";
  std::vector<std::string> measured, skipped;
  int parity_cells = 0;
  for (const auto& c : build_cells(spec)) {
    if (c.role == "measure") measured.push_back(c.id);
    if (c.role == "measure" && !c.runnable) skipped.push_back(c.id);
    parity_cells += c.role == "parity";
  }
  EXPECT_EQ(measured, names);
  // On a CPU the CUDA-only parts are listed, not run.
  EXPECT_EQ(skipped, (std::vector<std::string>{"top-lt-epilogues", "top-gelu-epilogue", "top-cuda-graph"}));
  // Each runnable rung with accumulation gets its single-step reference:
  // fp32+grad-accum, top, and top-X for the eleven runnable X other than grad-accum.
  EXPECT_EQ(parity_cells, 13);
}

TEST(Rungs, ParityTolerancesFollowTheLoosestNumericChange) {
  EXPECT_DOUBLE_EQ(parity_rtol(parse_rung("fp32").sw), 1e-5);
  EXPECT_DOUBLE_EQ(parity_rtol(parse_rung("fp32+flash+fused").sw), 1e-5);
  EXPECT_DOUBLE_EQ(parity_rtol(parse_rung("tf32").sw), 5e-3);
  EXPECT_DOUBLE_EQ(parity_rtol(parse_rung("grad-accum").sw), 1e-2);
}

// A TrainStep of `rung` on the tiny preset, on the CPU, with synthetic data.
std::unique_ptr<TrainStep> tiny_cpu_step(const char* rung_name) {
  RunConfig cfg = config_for("tiny", Overrides{}, "cpu");
  const Rung rung = parse_rung(rung_name);
  cfg.rung = rung.name;
  cfg.sw = rung.sw;
  SyntheticSpec spec{cfg.batch, cfg.seq, cfg.model.vocab_size, cfg.seed};
  return std::make_unique<TrainStep>(cfg, torch::kCPU, make_synthetic_source(spec));
}

TEST(Rungs, EffectiveIsWhatHappenedNotWhatWasAsked) {
  auto owned = tiny_cpu_step("fused-adamw");
  TrainStep& step = *owned;
  // Nothing has run yet: neither the fused ops nor _fused_adamw_.
  nlohmann::json sw = step.describe_switches();
  EXPECT_FALSE(sw["fused"]["effective"].get<bool>()) << sw["fused"].dump();
  EXPECT_FALSE(sw["fused-ln"]["effective"].get<bool>()) << sw["fused-ln"].dump();
  EXPECT_FALSE(sw["fused-adamw"]["effective"].get<bool>()) << sw["fused-adamw"].dump();
  PhaseObserver none;
  step.run(0, none);
  sw = step.describe_switches();
  EXPECT_TRUE(sw["fused"]["effective"].get<bool>()) << sw["fused"].dump();
  auto reason = [&](const char* name) { return sw[name]["reason"].get<std::string>(); };
  // tiny has 2 layers: the embeddings' add, then 2 fused adds, one MLP and two
  // attention linears per layer; one classifier per micro-step.
  EXPECT_NE(reason("fused-ln").find("add_layer_norm ran 5 times"), std::string::npos) << reason("fused-ln");
  EXPECT_NE(reason("fused-linear").find("mlp_gelu ran 2 times, ladder::linear_bias 4"), std::string::npos)
      << reason("fused-linear");
  EXPECT_NE(reason("fused-ce").find("classifier_cross_entropy ran 1 times"), std::string::npos) << reason("fused-ce");
  for (const char* cuda_only : {"lt-epilogues", "gelu-epilogue", "cuda-graph"}) {
    EXPECT_TRUE(sw[cuda_only]["enabled"].get<bool>()) << cuda_only;
    EXPECT_FALSE(sw[cuda_only]["effective"].get<bool>()) << cuda_only;
    EXPECT_FALSE(sw[cuda_only]["applicable"].get<bool>()) << cuda_only;
  }
  EXPECT_TRUE(sw["fused-adamw"]["effective"].get<bool>());
  EXPECT_NE(reason("fused-adamw").find("called 2 times"), std::string::npos) << reason("fused-adamw");  // 2 groups
  // No cuBLASLt and no CUDA graph on a CPU; the flat gradient buffer is there.
  EXPECT_EQ(sw["fused"]["fusions_active"],
            nlohmann::json({"residual_add_layer_norm", "layer_norm_outputs_in_bf16", "mlp_one_autograd_node",
                            "classifier_loss_and_grad_in_one_pass", "flat_gradient_buffer",
                            "weight_grads_added_into_buffer", "clip_inside_fused_adamw"}));
  std::vector<std::string> not_used;
  for (const auto& e : sw["fused"]["fusions_not_used"]) not_used.push_back(e["name"]);
  EXPECT_EQ(not_used, (std::vector<std::string>{"lt-epilogues", "gelu-epilogue", "cuda-graph"}));
}

// adamw-clip left out: the clip scales the gradients itself, and the fused
// AdamW gets no divisor; the losses are the same maths.
TEST(Rungs, AdamwClipLeftOutClipsOutsideTheKernel) {
  // The fused-adamw rung, and the same switches without adamw-clip.
  auto with = tiny_cpu_step("fused-adamw");
  auto without = tiny_cpu_step(
      "fp32+tf32+bf16+fused-ln+fused-linear+lt-epilogues+gelu-epilogue+fused-ce+flat-grads+cuda-graph+flash+"
      "vocab-pad+fused-adamw");
  PhaseObserver none;
  with->run(0, none);
  without->run(0, none);
  // Step 1's loss follows step 0's update, clipped either way.
  const double a = with->run(1, none).loss.item<double>(), b = without->run(1, none).loss.item<double>();
  EXPECT_NEAR(a, b, 1e-5 * a);
  EXPECT_TRUE(with->describe_switches()["adamw-clip"]["effective"].get<bool>());
  const auto sw = without->describe_switches();
  EXPECT_FALSE(sw["adamw-clip"]["enabled"].get<bool>());
  for (const auto& f : sw["fused"]["fusions_active"]) EXPECT_NE(f, "clip_inside_fused_adamw");
  // Alone on fp32 it has neither flat-grads nor fused-adamw: not effective.
  auto alone = tiny_cpu_step("fp32+adamw-clip");
  alone->run(0, none);
  EXPECT_FALSE(alone->describe_switches()["adamw-clip"]["effective"].get<bool>());
}

// A part of fused alone: only its own field of the plan, and only its own op
// runs; the group is not on, and says which part acted.
TEST(Rungs, OneFusedPartAloneChangesOnlyItsOwnMechanism) {
  RunConfig cfg = config_for("tiny", Overrides{}, "cpu");
  cfg.sw = parse_rung("fp32+fused-ln").sw;
  const StepPlan plan = plan_for(cfg);
  EXPECT_TRUE(plan.model.fused_ln);
  EXPECT_FALSE(plan.model.fused_linear || plan.model.fused_ce || plan.flat_grads || plan.cuda_graph);
  EXPECT_FALSE(plan.model.linear.lt_epilogues || plan.model.linear.gelu_epilogue);
  auto owned = tiny_cpu_step("fp32+fused-ln");
  PhaseObserver none;
  owned->run(0, none);
  const nlohmann::json sw = owned->describe_switches();
  EXPECT_TRUE(sw["fused-ln"]["effective"].get<bool>());
  EXPECT_FALSE(sw["fused-linear"]["enabled"].get<bool>());
  EXPECT_TRUE(sw["fused"]["enabled"].get<bool>());  // a part of it is on
  EXPECT_EQ(sw["fused"]["fusions_active"], nlohmann::json({"residual_add_layer_norm"}));  // fp32: no bf16 outputs
}

TEST(Switches, DeclarationsAreConsistent) {
  std::set<std::string> names;
  for (const SwitchDecl* s : all_switches()) {
    EXPECT_TRUE(names.insert(s->name).second) << "two switches named " << s->name;
    EXPECT_EQ(find_switch(s->name), s);
    EXPECT_TRUE(s->member || !parts_of(*s).empty()) << s->name << ": no flag and no parts";
    EXPECT_TRUE(!s->member || s->describe) << s->name << ": no describe";
    if (s->group) {
      const SwitchDecl* g = find_switch(s->group);
      ASSERT_NE(g, nullptr) << s->name << ": unknown group " << s->group;
      EXPECT_EQ(g->member, nullptr) << s->name << ": group " << s->group << " is not a group";
    }
    for (const char* need : s->needs) {
      if (need) {
        EXPECT_NE(find_switch(need), nullptr) << s->name << " needs unknown " << need;
      }
    }
  }
  // Every flag of Switches has one declaration.
  Switches all;
  for (const SwitchDecl* s : all_switches()) all.set(*s, true);
  EXPECT_EQ(count_on(all), 15);
  EXPECT_EQ(sizeof(Switches), 15 * sizeof(bool)) << "a Switches flag without a declaration";
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
  EXPECT_TRUE(read.tf32 && read.on("fused") && read.flat_grads && read.cuda_graph && !read.flash);
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
  EXPECT_EQ(keys(owned->describe_switches()), sorted(declared));
}

// The docs' switch table is the declarations' (`ladder switches`).
TEST(Switches, VariantsReadmeShowsTheDeclaredTable) {
  std::ifstream in(std::string(LADDER_SOURCE_DIR) + "/variants/README.md");
  ASSERT_TRUE(in) << "variants/README.md";
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(readme.find(switches_markdown()), std::string::npos)
      << "variants/README.md does not hold `ladder switches`'s table; it should be:\n" << switches_markdown();
}

// The step's fused rung adds the linears' and the lm_head's weight gradients
// straight into the flat buffer: autograd hands those weights no gradient (a
// hook on one sees none), while the biases and LayerNorms still get theirs.
TEST(Rungs, FusedStepAddsWeightGradientsIntoTheFlatBuffer) {
  auto owned = tiny_cpu_step("fused-adamw");
  TrainStep& step = *owned;
  auto params = step.model()->named_parameters();
  std::map<std::string, int> handed;
  for (const char* name : {"h.0.mlp.c_fc.weight", "h.1.attn.c_attn.weight", "wte.weight", "h.0.mlp.c_fc.bias",
                           "h.0.ln_1.weight"}) {
    params[name].register_hook([&handed, name](const torch::Tensor& g) { handed[name] += g.defined() ? 1 : 0; });
  }
  PhaseObserver none;
  step.run(0, none);
  EXPECT_EQ(handed["h.0.mlp.c_fc.weight"], 0);
  EXPECT_EQ(handed["h.1.attn.c_attn.weight"], 0);
  EXPECT_EQ(handed["wte.weight"], 1);  // the embedding's part; the lm_head's went into the buffer
  EXPECT_EQ(handed["h.0.mlp.c_fc.bias"], 1);
  EXPECT_EQ(handed["h.0.ln_1.weight"], 1);
}

TEST(Matrix, CellsPutFp32FirstAndNameShapesWhenThereAreSeveral) {
  MatrixSpec spec;
  spec.device = "cpu";
  spec.presets = {"tiny"};
  spec.rungs = {"flash"};
  auto cells = build_cells(spec);
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].id, "fp32");
  EXPECT_EQ(cells[1].id, "flash");
  EXPECT_EQ(cells[1].parity_ref, "fp32");
  spec.batches = {2, 4};
  cells = build_cells(spec);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].id, "tiny-b2-t64/fp32");
  EXPECT_EQ(cells[3].id, "tiny-b4-t64/flash");
  EXPECT_EQ(cells[3].cfg.batch, 4);
}

TEST(Matrix, GradAccumGetsASingleStepReferenceWithTheSameTotalBatch) {
  MatrixSpec spec;
  spec.device = "cpu";
  spec.presets = {"tiny"};  // B4 T64, total 1024 tokens: 4 micro-steps
  spec.rungs = {"grad-accum"};
  auto cells = build_cells(spec);
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[1].id, "grad-accum.parity-single");
  EXPECT_EQ(cells[1].cfg.batch, 16);
  EXPECT_FALSE(cells[1].cfg.sw.grad_accum);
  EXPECT_EQ(cells[2].cfg.micro_steps(), 4);
  EXPECT_EQ(cells[2].parity_ref, "grad-accum.parity-single");
  EXPECT_EQ(cells[2].parity_subject, "grad-accum");
}

TEST(Matrix, AccumulationParityIsSizedToTheDeviceMemory) {
  MatrixSpec spec;
  spec.device = "cpu";
  spec.presets = {"tiny"};  // B4 T64, 4 micro-steps
  spec.rungs = {"grad-accum"};
  RunConfig probe = config_for("tiny", Overrides{}, "cpu");
  probe.sw = parse_rung("grad-accum").sw;  // the single step: the rung without accumulation
  probe.sw.grad_accum = false;
  auto memory_for_single_batch = [&](int64_t batch) {
    probe.batch = batch;
    return int64_t(double(step_memory_estimate_bytes(probe)) / kParityMemoryFraction) + 1;
  };
  // Room for one step of 2 micro-batches but not 3: the reference replays 2.
  spec.device_memory_bytes = memory_for_single_batch(8);
  auto cells = build_cells(spec);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].id, "fp32");
  EXPECT_EQ(cells[1].id, "grad-accum.parity-accum");
  EXPECT_EQ(cells[1].cfg.batch, 4);
  EXPECT_EQ(cells[1].cfg.micro_steps(), 2);
  EXPECT_EQ(cells[2].id, "grad-accum.parity-single");
  EXPECT_EQ(cells[2].cfg.batch, 8);
  EXPECT_EQ(cells[3].parity_subject, "grad-accum.parity-accum");
  EXPECT_EQ(cells[3].parity_ref, "grad-accum.parity-single");
  EXPECT_EQ(cells[3].cfg.micro_steps(), 4);  // the measured rung is unchanged
  // Room for a step of 2 rows only: 2 micro-steps of a halved, then quartered micro-batch.
  spec.device_memory_bytes = memory_for_single_batch(2);
  cells = build_cells(spec);
  EXPECT_EQ(cells[1].cfg.batch, 1);
  EXPECT_EQ(cells[1].cfg.micro_steps(), 2);
  EXPECT_EQ(cells[2].cfg.batch, 2);
  // Unknown memory: the full 4 micro-steps, as before.
  spec.device_memory_bytes = 0;
  EXPECT_EQ(build_cells(spec)[1].cfg.batch, 16);
}

TEST(Matrix, DdpOnOneDeviceIsNotRunnableUnlessAskedFor) {
  MatrixSpec spec;
  spec.device = "cpu";
  spec.presets = {"tiny"};
  spec.nproc_per_node = 1;  // one GPU: the default rank count there
  auto ddp_cell = [&] {
    for (const auto& c : build_cells(spec))
      if (c.id == "ddp") return c;
    ADD_FAILURE() << "no ddp cell";
    return Cell{};
  };
  const Cell skipped = ddp_cell();
  EXPECT_FALSE(skipped.runnable);
  EXPECT_NE(skipped.not_runnable_reason.find("single rank"), std::string::npos) << skipped.not_runnable_reason;
  EXPECT_NE(skipped.not_runnable_reason.find("--rungs ddp"), std::string::npos) << skipped.not_runnable_reason;
  spec.ddp_requested = true;
  EXPECT_TRUE(ddp_cell().runnable);
  spec.ddp_requested = false;
  spec.nproc_per_node = 2;
  EXPECT_TRUE(ddp_cell().runnable);
}

TEST(Matrix, TotalBatchNotDivisibleByMicroBatchIsRejected) {
  MatrixSpec spec;
  spec.device = "cpu";
  spec.presets = {"tiny"};
  spec.rungs = {"grad-accum"};
  spec.overrides.fields.set("total_batch", int64_t(1000));  // not a multiple of 4*64
  try {
    build_cells(spec);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--total-batch: 1000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  }
}

TEST(Matrix, MatrixFileRejectsUnknownKeysAndBadJson) {
  const std::string path = ::testing::TempDir() + "ladder_matrix_test.json";
  MatrixSpec spec;
  std::ofstream(path) << R"({"presets": ["tiny"], "rungz": ["fp32"]})";
  try {
    read_matrix_file(path, spec);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'rungz'"), std::string::npos) << e.what();
  }
  std::ofstream(path) << R"({"presets": ["tiny"], )";
  EXPECT_THROW(read_matrix_file(path, spec), ConfigError);
  std::ofstream(path) << R"({"presets": "tiny", "batch": [2, 4], "rungs": ["fp32", "flash"], "steps": 3})";
  read_matrix_file(path, spec);
  EXPECT_EQ(spec.presets, std::vector<std::string>{"tiny"});
  EXPECT_EQ(spec.batches, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(spec.overrides.fields.get<int64_t>("steps").value_or(-1), 3);
  std::ofstream(path) << R"({"batch": "four"})";
  EXPECT_THROW(read_matrix_file(path, spec), ConfigError);
}

}  // namespace
}  // namespace ladder
