// variants/switches/switch.h: a switch of the ladder, declared once.
//
// Every switch is one SwitchDecl in its own file in this folder, and that file
// is all there is to declare: CMake globs this folder and generates the list
// (build/generated/switch_list.cpp), so a new switch is a new file here named
// after it (`act_ckpt.cpp` defines `ladder::switches::act_ckpt`), its
// mechanism, and its test; no list, flag header or CMake line to edit. The
// declaration holds all that the rest of ladder knows about it:
//   - its name, the one spelling in rung names ("fp32+fused-ln"), in the
//     config's and the report's JSON, on the CLI and in the docs;
//   - its place in the list (`order`) and its role: a rung of the ladder, a
//     group of parts (the fused rung, whose parts are each a switch so that
//     ablation can measure each mechanism), a part of a group, or an extra
//     that only composites name ("fp32+X") and ablation measures;
//   - what it changes, in one line;
//   - the numerics it allows, which set its parity class and tolerance and
//     the MFU peak (loosest switch wins);
//   - how it applies to the step: the StepPlan, which the step and the model
//     read (they never read the config's switches), marks it acting, and its
//     apply() may refine that (not on the ddp rung, say) and set the model's
//     options;
//   - how its effect is reported: report.switches.<name>, from the facts the
//     step gathered (what ran, how often, on which device).
// Which switches are on (rungs.h's Switches) and which act (StepPlan) are
// keyed by the declaration, never by a hand-written field, and code names a
// switch by its symbol (plan.acts(switches::flat_grads); the generated
// variants/config/switch_symbols.h declares them all), so a misspelt switch does not compile.
// Names are parsed only at the edges: the CLI, the matrix, config JSON
// (find_switch, switch_named). Rungs, ablations,
// --help and the report's switch list all come from the list; the README's
// table is checked against it (tests/variants/test_switches.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "variants/ops/add_layer_norm/add_layer_norm.h"
#include "variants/fused_linear/fused_linear.h"
#include "variants/model/model.h"
#include "variants/config/precision.h"
#include "variants/config/switch_decl.h"
#include "variants/config/switch_effect.h"
#include "variants/config/switch_flags.h"

namespace ladder {

struct RunConfig;
class StepOptimizer;
class ProcessGroup;
class GradientSync;
class CastCache;
struct AttentionPlan;

// What the one training step does, made from a run's config by plan_for: a
// switch that is on acts unless its apply() says otherwise (the flat buffer
// not on the ddp rung, bf16 autocast left off by --cpu-bf16), and apply() sets
// the model's options. The model and the step read this, never the switches.
struct StepPlan {
  Switches acting;     // the switches whose mechanism acts in this step
  ModelOptions model;  // attention, fused ops and their epilogues (variants/model/model.h)
  // Switches that are on but cannot act in this step, and why (the report's
  // reason; they are reported not applicable, and do not count against their
  // group).
  std::map<std::string, std::string> stood_down;
  // Whether the switch's mechanism acts: plan.acts(switches::flat_grads).
  bool acts(const SwitchDecl& s) const { return acting.on(s); }
  // Called by a switch's apply(), its own or a later switch's: `s` is on
  // but does not act here, because `why`.
  void stand_down(const SwitchDecl& s, std::string why);
};

// What the step saw, for a switch's describe(): counters since the step was
// built, the effects the device reported, and the step's parts.
struct SwitchFacts {
  const RunConfig& cfg;
  const StepPlan& plan;
  torch::Device device;
  PrecisionEffect tf32, bf16;       // what enable_tf32 / enable_bf16 found
  int64_t add_layer_norm_calls = 0;  // add_layer_norm forward calls since the step was built
  fused::LayerNormLaunches layer_norm_launches;  // its CUDA launches since then, by kernel
  fused::FusedLinearStats linear;   // fused linear calls and cuBLASLt GEMMs since then
  bool graph_captured = false;
  bool optimizer_in_graph = false;
  int64_t graph_replays = 0, steps_run = 0;
  const StepOptimizer& optimizer;
  const ProcessGroup* pg = nullptr;   // the ddp rung's
  const GradientSync* sync = nullptr;  // the ddp rung's
  const CastCache* casts = nullptr;    // cast-cache's, when it acts and bf16 took effect
  const AttentionPlan* attention = nullptr;  // flash's attention plan
};

// The plan a config's switches make: each switch that is on is marked acting
// and applies itself, in list order (a switch may read what an earlier one set).
StepPlan plan_for(const RunConfig& cfg);

// The switch table as markdown, one row per declaration (`ladder switches`;
// variants/README.md shows it, and a test keeps the two the same).
std::string switches_markdown();


}  // namespace ladder
