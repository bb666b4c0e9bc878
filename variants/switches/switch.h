// variants/switches/switch.h: a switch of the ladder, declared once.
//
// Every switch is one SwitchDecl in its own file in this folder, listed once,
// in ladder order, in all.cpp. The declaration holds all that the rest of
// ladder knows about it:
//   - its name, the one spelling in rung names ("fp32+fused-ln"), in the
//     config's and the report's JSON, on the CLI and in the docs;
//   - the group it belongs to: the fused rung is a group of parts, each its
//     own switch, so that ablation can measure each mechanism;
//   - what it changes, in one line;
//   - the numerics it allows, which set its parity class and tolerance and
//     the MFU peak (loosest switch wins);
//   - how it applies to the step: it sets fields of the StepPlan, which the
//     step and the model read (they never read the switches);
//   - how its effect is reported: report.switches.<name>, from the facts the
//     step gathered (what ran, how often, on which device).
// Rungs, ablations, --help and the report's switch list all come from the
// list; the JSON schemas and the README tables are checked against it
// (tests/test_rungs.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "variants/fused_linear.h"
#include "variants/model.h"
#include "variants/precision.h"
#include "variants/rungs.h"

namespace ladder {

struct RunConfig;
class StepOptimizer;
class ProcessGroup;
class GradientSync;

// The numerics a switch allows, loosest last: a rung's parity class and MFU
// precision are those of its loosest switch in effect.
enum class Numerics { kFp32Exact, kTf32, kBf16 };

// What the one training step does, set by the switches' apply() from a run's
// config (plan_for). The model and the step read this, never the switches.
struct StepPlan {
  bool tf32 = false;           // reduced-precision fp32 matmuls (TF32 / oneDNN)
  bool bf16_autocast = false;  // bf16 autocast around forward and loss
  ModelOptions model;          // attention, fused ops and their epilogues (variants/model.h)
  bool flat_grads = false;     // gradients as views of one flat buffer (not with ddp's buckets)
  bool cuda_graph = false;     // micro-steps captured and replayed as CUDA graphs
  bool fused_adamw = false;    // multi-tensor _fused_adamw_
  bool clip_in_optimizer = false;  // the clip's scaling inside the AdamW kernel
};

// What the step saw, for a switch's describe(): counters since the step was
// built, the effects the device reported, and the step's parts.
struct SwitchFacts {
  const RunConfig& cfg;
  const StepPlan& plan;
  torch::Device device;
  SwitchEffect tf32, bf16;          // what enable_tf32 / enable_bf16 found
  int64_t add_layer_norm_calls = 0;  // add_layer_norm forward calls since the step was built
  fused::FusedLinearStats linear;   // fused linear calls and cuBLASLt GEMMs since then
  bool graph_captured = false;
  bool optimizer_in_graph = false;
  int64_t graph_replays = 0, steps_run = 0;
  const StepOptimizer& optimizer;
  const ProcessGroup* pg = nullptr;   // the ddp rung's
  const GradientSync* sync = nullptr;  // the ddp rung's
};

struct SwitchDecl {
  const char* name;          // the one spelling: "fused-ln"
  bool Switches::*member;    // its flag; nullptr for a group (on when all its parts are)
  const char* group;         // the group it is part of ("fused"), or nullptr: a rung of the ladder
  const char* what;          // one line: --help, a rung's change, the docs
  Numerics numerics;
  // Switches it needs on to have any effect (nullptr-terminated); without
  // them it is reported as not effective.
  std::array<const char*, 3> needs;
  bool cuda_only;            // nothing to do on a CPU: ablation lists it, unmeasured there
  // Sets the plan's fields this switch owns; called when the switch is on.
  // nullptr: the switch acts through RunConfig (vocab-pad: model_vocab(),
  // grad-accum: micro_steps(), ddp: the process group).
  void (*apply)(const RunConfig&, StepPlan&);
  // Its effect once steps ran: {"effective", "mechanism", "reason", ...};
  // "fusions" lists what a part of a group adds to the group's
  // fusions_active. Called when the switch is on, its needs are on, and (if
  // cuda_only) on CUDA; otherwise the report says why it could not act, and
  // a group does not count it against its own effectiveness.
  nlohmann::json (*describe)(const SwitchFacts&);
};

// Every switch, in ladder order, a group's parts after the group.
const std::vector<const SwitchDecl*>& all_switches();
// nullptr when no switch has that name.
const SwitchDecl* find_switch(const std::string& name);
// The switch of that name; throws std::logic_error for a name no file declares.
const SwitchDecl& switch_named(const std::string& name);
// A group's parts, in list order.
std::vector<const SwitchDecl*> parts_of(const SwitchDecl& group);

// The plan a config's switches make: each switch that is on applies itself,
// in list order (a switch may read what an earlier one set).
StepPlan plan_for(const RunConfig& cfg);

// The loosest numerics among the switches that are on: a rung's parity class
// (parity_rtol, rungs.h) and the precision its MFU is measured against.
Numerics loosest_numerics(const Switches& sw);
// "fp32-exact", "tf32", "bf16": the parity class a switch's numerics give.
const char* numerics_name(Numerics n);
// The switch table as markdown, one row per declaration (`ladder switches`;
// variants/README.md shows it, and a test keeps the two the same).
std::string switches_markdown();

// A report.switches entry for a switch that is on.
nlohmann::json switch_effect(bool effective, const std::string& mechanism, const std::string& reason);

}  // namespace ladder
