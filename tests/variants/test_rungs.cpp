// tests/variants/test_rungs.cpp: the ladder is data: each rung adds exactly one
// switch; names and composites parse; ablation produces the expected set; what
// a rung's switches did in a real tiny step (effective, fusions).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/run/matrix.h"
#include "tests/support/tiny_step.h"
#include "variants/config/config.h"
#include "variants/config/rungs.h"
#include "variants/step/step.h"
#include "variants/switches/switch.h"

namespace ladder {
namespace {

// The flags one declaration sets: its own, or its parts'.
size_t flags_of(const SwitchDecl& s) { return s.role == SwitchRole::kGroup ? parts_of(s).size() : 1; }

TEST(Rungs, LadderOrderAndEachRungAddsOneDeclaredSwitch) {
  const auto& l = ladder_rungs();
  std::vector<std::string> names;
  for (const auto& r : l) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fp32", "tf32", "bf16", "fused", "flash", "vocab-pad",
                                             "fused-adamw", "grad-accum", "ddp"}));
  EXPECT_EQ(l[0].sw.count(), 0u);
  for (size_t i = 1; i < l.size(); ++i) {
    const SwitchDecl& added = switch_named(l[i].name);
    EXPECT_TRUE(l[i].sw.on(added)) << l[i].name;
    EXPECT_EQ(l[i].sw.count(), l[i - 1].sw.count() + flags_of(added)) << l[i].name;
    // Everything the previous rung had is still on.
    for (const SwitchDecl* info : all_switches())
      if (l[i - 1].sw.on(*info)) {
        EXPECT_TRUE(l[i].sw.on(*info)) << l[i].name << " dropped " << info->name;
      }
  }
  EXPECT_EQ(flags_of(switch_named("fused")), 9u);
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
  EXPECT_TRUE(solo.sw.on(switches::flash) && solo.sw.on(switches::fused_adamw));
  EXPECT_EQ(solo.sw.count(), 2u);
  const Rung top = parse_rung("top-bf16");
  EXPECT_FALSE(top.sw.on(switches::bf16));
  EXPECT_FALSE(top.sw.on(switches::ddp));
  size_t extras = 0;
  for (const SwitchDecl* s : all_switches()) extras += s->role == SwitchRole::kExtra;
  // Every flag but bf16, ddp and the extras, which go beyond the ladder.
  EXPECT_EQ(top.sw.count(), all_switches().size() - 1 /*fused: no flag*/ - 2 - extras);
  // "top" by itself (a partial ablation names it): the ablation's top rung.
  const Rung whole = parse_rung("top");
  EXPECT_EQ(whole.name, "top");
  EXPECT_TRUE(whole.sw.on(switches::bf16) && !whole.sw.on(switches::ddp));
  EXPECT_EQ(whole.sw.count(), top.sw.count() + 1);
  const auto ablation = ablation_rungs();
  const auto in_ablation = std::find_if(ablation.begin(), ablation.end(), [](const Rung& r) { return r.name == "top"; });
  ASSERT_NE(in_ablation, ablation.end());
  EXPECT_EQ(in_ablation->sw.count(), whole.sw.count());
  const Rung no_graph = parse_rung("top-cuda-graph");
  EXPECT_TRUE(no_graph.sw.on(switches::fused_ln) && !no_graph.sw.on(switches::cuda_graph) && !no_graph.sw.on(switches::fused));
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
  // From the declarations: every switch but ddp alone on fp32 where it needs
  // no other (a group and each of its parts), then the top rung, then the top
  // without each rung or part, or with each extra that a single process can
  // run (not one that needs ddp: zero1).
  auto needs_ddp = [](const SwitchDecl& s) {
    return std::find(s.needs.begin(), s.needs.end(), &switches::ddp) != s.needs.end();
  };
  std::vector<std::string> expected = {"fp32"};
  for (const SwitchDecl* s : all_switches())
    if (std::string(s->name) != "ddp" && !s->needs[0]) expected.push_back(std::string("fp32+") + s->name);
  expected.push_back("top");
  for (const SwitchDecl* s : all_switches())
    if (std::string(s->name) != "ddp" && !needs_ddp(*s))
      expected.push_back((s->role == SwitchRole::kExtra ? "top+" : "top-") + std::string(s->name));
  EXPECT_EQ(names, expected);
  EXPECT_EQ(std::find(names.begin(), names.end(), "top+zero1"), names.end());  // the top is one process
  for (const char* mission : {"fp32+fused", "fp32+fused-ln", "fp32+fused-ce", "top-cuda-graph", "top-adamw-clip"})
    EXPECT_NE(std::find(names.begin(), names.end(), mission), names.end()) << mission;
  EXPECT_EQ(std::find(names.begin(), names.end(), "fp32+lt-epilogues"), names.end());  // it needs fused-linear
  MatrixSpec spec;
  spec.device = "cpu";
  spec.presets = {"tiny"};
  spec.mode = "ablation";
  std::vector<std::string> measured, skipped, cuda_only;
  int parity_cells = 0, accumulating = 0;
  for (const auto& c : build_cells(spec)) {
    if (c.role == "measure") measured.push_back(c.id);
    if (c.role == "measure" && !c.runnable) skipped.push_back(c.id);
    accumulating += c.role == "measure" && c.runnable && c.cfg.sw.on(switches::grad_accum);
    parity_cells += c.role == "parity";
  }
  EXPECT_EQ(measured, names);
  // On a CPU the rungs that vary a CUDA-only switch are listed, not run.
  for (const auto& r : ablation_rungs())
    if (r.varies && r.varies->cuda_only) cuda_only.push_back(r.name);
  EXPECT_EQ(skipped, cuda_only);
  EXPECT_NE(std::find(skipped.begin(), skipped.end(), "top-cuda-graph"), skipped.end());
  // Each runnable rung with accumulation gets its single-step reference
  // (unknown device memory: no halved accumulating twin).
  EXPECT_GT(accumulating, 0);
  EXPECT_EQ(parity_cells, accumulating);
}

TEST(Rungs, ParityTolerancesFollowTheLoosestNumericChange) {
  EXPECT_DOUBLE_EQ(parity_rtol(parse_rung("fp32").sw), 1e-5);
  EXPECT_DOUBLE_EQ(parity_rtol(parse_rung("fp32+flash+fused").sw), 1e-5);
  EXPECT_DOUBLE_EQ(parity_rtol(parse_rung("tf32").sw), 5e-3);
  EXPECT_DOUBLE_EQ(parity_rtol(parse_rung("grad-accum").sw), 1e-2);
}


TEST(Rungs, EffectiveIsWhatHappenedNotWhatWasAsked) {
  auto owned = tiny_cpu_step("fused-adamw");
  TrainStep& step = *owned;
  // Nothing has run yet: neither the fused ops nor _fused_adamw_.
  SwitchEffects sw = step.describe_switches();
  EXPECT_FALSE(sw.at("fused").effective.value()) << dump(sw.at("fused"));
  EXPECT_FALSE(sw.at("fused-ln").effective.value()) << dump(sw.at("fused-ln"));
  EXPECT_FALSE(sw.at("fused-adamw").effective.value()) << dump(sw.at("fused-adamw"));
  PhaseObserver none;
  step.run(0, none);
  sw = step.describe_switches();
  EXPECT_TRUE(sw.at("fused").effective.value()) << dump(sw.at("fused"));
  auto reason = [&](const char* name) { return sw.at(name).reason; };
  // tiny has 2 layers: the embeddings' add, then 2 fused adds, one MLP and two
  // attention linears per layer; one classifier per micro-step.
  EXPECT_NE(reason("fused-ln").find("add_layer_norm ran 5 times"), std::string::npos) << reason("fused-ln");
  EXPECT_NE(reason("fused-linear").find("mlp_gelu ran 2 times, ladder::linear_bias 4"), std::string::npos)
      << reason("fused-linear");
  EXPECT_NE(reason("fused-ce").find("classifier_cross_entropy ran 1 times"), std::string::npos) << reason("fused-ce");
  for (const char* cuda_only : {"lt-epilogues", "gelu-epilogue", "cuda-graph"}) {
    EXPECT_TRUE(sw.at(cuda_only).enabled) << cuda_only;
    EXPECT_FALSE(sw.at(cuda_only).effective.value()) << cuda_only;
    EXPECT_FALSE(sw.at(cuda_only).applicable.value()) << cuda_only;
  }
  EXPECT_TRUE(sw.at("fused-adamw").effective.value());
  EXPECT_NE(reason("fused-adamw").find("called 2 times"), std::string::npos) << reason("fused-adamw");  // 2 groups
  // No cuBLASLt and no CUDA graph on a CPU; the flat gradient buffer is there,
  // and the embedding's rows go into it.
  EXPECT_EQ(sw.at("fused").fusions_active.value(),
            (std::vector<std::string>{"residual_add_layer_norm", "layer_norm_outputs_in_bf16", "mlp_one_autograd_node",
                            "classifier_loss_and_grad_in_one_pass", "weight_casts_once_per_step",
                            "flat_gradient_buffer", "weight_grads_added_into_buffer",
                            "embedding_rows_added_into_buffer", "clip_inside_fused_adamw"}));
  std::vector<std::string> not_used;
  for (const auto& e : sw.at("fused").fusions_not_used.value()) not_used.push_back(e.name);
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
  EXPECT_TRUE(with->describe_switches().at("adamw-clip").effective.value());
  const auto sw = without->describe_switches();
  EXPECT_FALSE(sw.at("adamw-clip").enabled);
  for (const auto& f : sw.at("fused").fusions_active.value()) EXPECT_NE(f, "clip_inside_fused_adamw");
  // Alone on fp32 it has neither flat-grads nor fused-adamw: not effective.
  auto alone = tiny_cpu_step("fp32+adamw-clip");
  alone->run(0, none);
  EXPECT_FALSE(alone->describe_switches().at("adamw-clip").effective.value());
}

// On the ddp rung the flat buffer stands down (the gradients live in the
// all-reduce buckets), and adamw-clip with it: the report then says it is not
// applicable there, with why, instead of "not effective" (which
// scripts/smoke_verdict.py fails, and which counted against the fused group).
TEST(Rungs, AdamwClipStandsDownWithTheFlatBufferOnTheDdpRung) {
  RunConfig cfg = config_for("tiny", Overrides{}, "cpu");
  cfg.sw = parse_rung("ddp").sw;
  const StepPlan plan = plan_for(cfg);
  EXPECT_FALSE(plan.acts(switches::flat_grads));
  EXPECT_FALSE(plan.acts(switches::adamw_clip));
  ASSERT_EQ(plan.stood_down.count("adamw-clip"), 1u);
  EXPECT_NE(plan.stood_down.at("adamw-clip").find("all-reduce buckets"), std::string::npos)
      << plan.stood_down.at("adamw-clip");
  // One process with every part: both act.
  cfg.sw = parse_rung("fused-adamw").sw;
  EXPECT_TRUE(plan_for(cfg).acts(switches::adamw_clip));
  EXPECT_EQ(plan_for(cfg).stood_down.count("adamw-clip"), 0u);
}

// A part of fused alone: only it acts in the plan, and only its own op
// runs; the group is not on, and says which part acted.
TEST(Rungs, OneFusedPartAloneChangesOnlyItsOwnMechanism) {
  RunConfig cfg = config_for("tiny", Overrides{}, "cpu");
  cfg.sw = parse_rung("fp32+fused-ln").sw;
  const StepPlan plan = plan_for(cfg);
  EXPECT_TRUE(plan.model.fused_ln);
  EXPECT_FALSE(plan.model.fused_linear || plan.model.fused_ce || plan.acts(switches::flat_grads) || plan.acts(switches::cuda_graph));
  EXPECT_EQ(plan.acting.count(), 1u);
  EXPECT_FALSE(plan.model.linear.lt_epilogues || plan.model.linear.gelu_epilogue);
  auto owned = tiny_cpu_step("fp32+fused-ln");
  PhaseObserver none;
  owned->run(0, none);
  const SwitchEffects sw = owned->describe_switches();
  EXPECT_TRUE(sw.at("fused-ln").effective.value());
  EXPECT_FALSE(sw.at("fused-linear").enabled);
  EXPECT_TRUE(sw.at("fused").enabled);  // a part of it is on
  EXPECT_EQ(sw.at("fused").fusions_active.value(), std::vector<std::string>{"residual_add_layer_norm"});  // fp32: no bf16 outputs
}

// The step's fused rung adds the linears' weight and bias gradients, the
// lm_head's weight gradient and, on a CPU, the embedding's rows of wte
// straight into the flat buffer: autograd hands those parameters no gradient
// (a hook on one sees none), while the LayerNorms still get theirs.
TEST(Rungs, FusedStepAddsLinearGradientsIntoTheFlatBuffer) {
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
  EXPECT_EQ(handed["wte.weight"], 0);  // the lm_head's and the embedding's parts both went into the buffer
  EXPECT_EQ(handed["h.0.mlp.c_fc.bias"], 0);  // a fused linear's bias too
  EXPECT_EQ(handed["h.0.ln_1.weight"], 1);    // the LayerNorm's go through autograd
}

// What the harness does with a rung that is not the ladder's usual (the
// peers' switches, grad-accum's parity against one step of the same rows)
// is read from the declarations (variants/config/switch_decl.h), not from names in the harness.
TEST(Rungs, HarnessRolesComeFromTheDeclarations) {
  int peers_base = 0;
  for (const SwitchDecl* s : all_switches()) peers_base += s->peers_base;
  EXPECT_EQ(peers_base, 1);
  EXPECT_EQ(peer_base_rung().name, switches::fused_adamw.name);
  EXPECT_EQ(peer_base_rung().sw, parse_rung("fused-adamw").sw);
  EXPECT_EQ(same_rows_parity_switch(parse_rung("grad-accum").sw), &switches::grad_accum);
  EXPECT_EQ(same_rows_parity_switch(parse_rung("ddp").sw), &switches::grad_accum);  // ddp is above grad-accum
  EXPECT_EQ(same_rows_parity_switch(parse_rung("fused-adamw").sw), nullptr);
  EXPECT_EQ(same_rows_parity_switch(parse_rung("fp32+grad-accum").sw), &switches::grad_accum);
}

}  // namespace
}  // namespace ladder

namespace ladder {
namespace {

// Issue 68: on a CPU where oneDNN takes a reduced fp32 mode (AMX, or
// avx512_bf16), enable_tf32 leaves oneDNN's matmul precision at 'tf32' or
// 'bf16', and PyTorch's legacy getter (float32MatmulPrecision) throws from
// then on ("you have used mix of the legacy and new APIs"); a step that read
// it to save the state failed to build. That state is forced here, then a
// step of every single-process rung is built, run once and destroyed in one
// process, each putting back the precision it found:
//   - on any CPU, through CUDA's matmul precision set to 'tf32' (the legacy
//     getter throws alike, and a CPU step's maths are untouched);
//   - oneDNN's matmul precision set to 'tf32' and to 'bf16' directly, where
//     this CPU's oneDNN can run that mode (on one without it, oneDNN cannot
//     create an fp32 inner product at all: a state enable_tf32 never leaves
//     behind, since its probe finds no effect and resets it).
TEST(Rungs, EveryStepBuildsWithAReducedFp32MatmulModeSet) {
  auto& ctx = at::globalContext();
  const auto matmul = at::Float32Op::MATMUL;
  const std::pair<at::Float32Backend, at::Float32Precision> states[] = {
      {at::Float32Backend::CUDA, at::Float32Precision::TF32},
      {at::Float32Backend::MKLDNN, at::Float32Precision::TF32},
      {at::Float32Backend::MKLDNN, at::Float32Precision::BF16}};
  for (const auto& [backend, mode] : states) {
    const at::Float32Precision before = ctx.float32Precision(backend, matmul);
    ctx.setFloat32Precision(backend, matmul, mode);
    if (backend == at::Float32Backend::MKLDNN) {
      try {
        torch::nn::functional::linear(torch::ones({64, 256}), torch::ones({256, 256}));
      } catch (const std::exception&) {  // dnnl::error, not c10::Error
        std::cout << "oneDNN cannot run fp32 matmuls in '" << at::precision2str(mode)
                  << "' on this CPU: that state is left out here\n";
        ctx.setFloat32Precision(backend, matmul, before);
        continue;
      }
    }
    for (const Rung& r : ladder_rungs()) {
      if (r.sw.on(switches::ddp)) continue;  // a process group of its own (tests/e2e/e2e_ddp.py)
      {
        auto step = tiny_cpu_step(r.name.c_str(), [](RunConfig& c) { c.cpu_bf16 = "on"; });
        PhaseObserver none;
        EXPECT_TRUE(std::isfinite(step->run(0, none).loss.item<double>())) << r.name;
      }
      EXPECT_EQ(ctx.float32Precision(backend, matmul), mode) << r.name << " did not put the precision back";
    }
    ctx.setFloat32Precision(backend, matmul, before);
  }
}

}  // namespace
}  // namespace ladder
