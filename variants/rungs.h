// variants/rungs.h: the speedup ladder as data.
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

namespace ladder {

struct Switches {
  bool tf32 = false;         // reduced-precision fp32 matmuls (TF32 on CUDA, oneDNN on CPU)
  bool bf16 = false;         // bf16 autocast around forward and loss
  bool fused = false;        // fused residual+LayerNorm and softmax-CE; CUDA graph on CUDA
  bool flash = false;        // scaled_dot_product_attention(is_causal)
  bool vocab_pad = false;    // V rounded up to a multiple of 128 (50257 -> 50304)
  bool fused_adamw = false;  // multi-tensor _fused_adamw_
  bool grad_accum = false;   // micro-steps up to the total batch
  bool ddp = false;          // data parallel across ranks (its own issue)

  bool operator==(const Switches& o) const;
};

struct SwitchInfo {
  const char* name;  // as in rung names: "tf32", "vocab-pad", ...
  bool Switches::*member;
  const char* what;  // one line for --help and the report
};
// In ladder order.
const std::vector<SwitchInfo>& switch_table();

struct Rung {
  std::string name;    // "flash", "fp32+flash", "top-flash"
  std::string change;  // what this rung adds to the previous one
  Switches sw;
};

// The cumulative ladder, fp32 first.
const std::vector<Rung>& ladder_rungs();
// Whether this build can run `r` on `device` ("cpu", "cuda", "cuda:N"): the
// ddp rung on CUDA needs NCCL compiled in.
bool rung_runnable(const Rung& r, const std::string& device, std::string* why_not = nullptr);

// Parses a ladder rung name, "fp32+a+b" or "top-a". Throws ConfigError
// naming `option`, the value and the valid names.
Rung parse_rung(const std::string& spec, const char* option = "--rungs");

// --mode ablation: each switch alone on fp32, then the top rung without each.
std::vector<Rung> ablation_rungs();

// Loss-parity tolerance (relative) for a rung against the fp32 baseline, set
// by the loosest numeric change it contains (see rungs.cpp for why).
double parity_rtol(const Switches& sw);
const char* parity_class(const Switches& sw);  // "fp32-exact", "tf32", "bf16"
// The switches whose numerics took effect: tf32 and bf16 cleared where the
// report's `switches` section (TrainStep::describe_switches) says they were
// not effective on the device (no TF32 on this CPU; bf16 left in fp32 by
// --cpu-bf16). Parity classes follow the precision actually used.
Switches numerics_in_effect(Switches sw, const nlohmann::json& described_switches);

void to_json(nlohmann::json& j, const Switches& s);
void from_json(const nlohmann::json& j, Switches& s);

}  // namespace ladder
