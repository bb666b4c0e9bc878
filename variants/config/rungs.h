// variants/config/rungs.h: the speedup ladder as data.
//
// A rung is a set of switches that the one shared step reads; the step is
// never copied. Rung N+1 is rung N plus one switch, so each speedup traces to
// a single change:
//
//   fp32 -> tf32 -> bf16 -> fused -> flash -> vocab-pad -> fused-adamw
//        -> grad-accum -> ddp
//
// Ablation specs name other combinations: "fp32+flash" is one switch alone on
// top of fp32, "top-flash" is the top single-process rung without it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "variants/config/base_rung.h"
#include "variants/config/switch_effect.h"
#include "variants/config/switch_flags.h"

namespace ladder {

struct Rung {
  std::string name;    // "flash", "fp32+flash", "top-flash"
  std::string change;  // what this rung adds to the previous one
  Switches sw;
  // The one switch an ablation rung varies ("fp32+X", "top-X"), else nullptr.
  const SwitchDecl* varies = nullptr;
};

// The cumulative ladder, base_rung() first.
const std::vector<Rung>& ladder_rungs();
// The base rung, named kBaseRungName (base_rung.h): ladder_rungs().front().
const Rung& base_rung();
// The ladder rung the PyTorch peers run the switches of: the one whose switch
// is declared peers_base (fused-adamw; the list's checks, switch_decl.cpp, ask for
// exactly one, a rung).
const Rung& peer_base_rung();
// The switch on in `sw` declared parity_same_rows (grad-accum), whose rung is
// checked against one step over the same rows; nullptr when none is on.
const SwitchDecl* same_rows_parity_switch(const Switches& sw);

// Whether this build can run `r` on `device` ("cpu", "cuda", "cuda:N"): the
// ddp rung on CUDA needs NCCL compiled in; an ablation rung that varies a
// CUDA-only switch (cuda-graph, the cuBLASLt epilogues) would measure
// nothing on a CPU.
bool rung_runnable(const Rung& r, const std::string& device, std::string* why_not = nullptr);

// Parses a ladder rung name, "fp32+a+b", "top" or "top-a". Throws ConfigError
// naming `option`, the value and the valid names.
Rung parse_rung(const std::string& spec, const char* option = "--rungs");

// --mode ablation: each switch alone on fp32, then the top rung without each;
// every part of a group (the fused rung's mechanisms) too: alone on fp32
// where it needs no other switch, and left out of the top rung; an extra
// added to the top rung, except one that acts on the ddp rung only (zero1:
// `--rungs ddp,ddp+zero1`).
std::vector<Rung> ablation_rungs();

// --mode memory: the extras declared memory_mode (they trade compute or
// communication for memory) beside the rungs they extend: fp32, fp32+X for
// each a single process runs (act-ckpt), ddp, ddp+X for each, and ddp with
// all of them.
std::vector<Rung> memory_rungs();

// Loss-parity tolerance (relative) for a rung against the fp32 baseline, set
// by the loosest numerics (SwitchDecl::numerics) of its switches (see
// rungs.cpp for why).
// The loosest numerics among the switches that are on: a rung's parity class
// (parity_rtol) and the precision its MFU is measured against.
Numerics loosest_numerics(const Switches& sw);
double parity_rtol(const Switches& sw);
const char* parity_class(const Switches& sw);  // "fp32-exact", "tf32", "bf16"
// The switches whose numerics took effect: tf32 and bf16 cleared where the
// report's `switches` section (TrainStep::describe_switches) says they were
// not effective on the device (no TF32 on this CPU; bf16 left in fp32 by
// --cpu-bf16). Parity classes follow the precision actually used.
Switches numerics_in_effect(Switches sw, const SwitchEffects& described_switches);


}  // namespace ladder
