// variants/rungs.cpp: the ladder table, rung-name parsing, ablations and the
// parity tolerances (see rungs.h).
#include "variants/rungs.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "variants/config.h"

namespace ladder {

bool Switches::operator==(const Switches& o) const {
  for (const auto& s : switch_table())
    if (this->*s.member != o.*s.member) return false;
  return true;
}

const std::vector<SwitchInfo>& switch_table() {
  static const std::vector<SwitchInfo> kTable = {
      {"tf32", &Switches::tf32, "reduced-precision fp32 matmuls (TF32; oneDNN on CPU)"},
      {"bf16", &Switches::bf16, "bf16 autocast around forward and loss"},
      {"fused", &Switches::fused, "fused residual+LayerNorm and softmax-CE; CUDA graph on CUDA"},
      {"flash", &Switches::flash, "scaled_dot_product_attention with is_causal"},
      {"vocab-pad", &Switches::vocab_pad, "vocabulary padded to a multiple of 128 (50257 -> 50304)"},
      {"fused-adamw", &Switches::fused_adamw, "multi-tensor fused AdamW (_fused_adamw_)"},
      {"grad-accum", &Switches::grad_accum, "gradient accumulation up to the total batch"},
      {"ddp", &Switches::ddp, "data parallel across ranks"},
  };
  return kTable;
}

const std::vector<Rung>& ladder_rungs() {
  static const std::vector<Rung> kLadder = [] {
    std::vector<Rung> rungs = {{"fp32", "FP32 baseline", Switches{}}};
    for (const auto& s : switch_table()) {
      Rung next = rungs.back();
      next.name = s.name;
      next.change = fmt::format("+ {}", s.what);
      next.sw.*s.member = true;
      rungs.push_back(next);
    }
    return rungs;
  }();
  return kLadder;
}

bool rung_runnable(const Rung& r, const std::string& device, std::string* why_not) {
#ifndef LADDER_WITH_NCCL
  if (r.sw.ddp && device.rfind("cuda", 0) == 0) {
    if (why_not) *why_not = "the ddp rung on CUDA needs NCCL, and this build has none (see `ladder version`)";
    return false;
  }
#endif
  (void)r;
  (void)device;
  (void)why_not;
  return true;
}

namespace {
const SwitchInfo* find_switch(const std::string& name) {
  for (const auto& s : switch_table())
    if (name == s.name) return &s;
  return nullptr;
}

std::string valid_names() {
  std::string names;
  for (const auto& r : ladder_rungs()) names += (names.empty() ? "" : ", ") + r.name;
  return names;
}

// The top rung a single process can run: everything but ddp.
Switches top_switches() {
  Switches sw;
  for (const auto& s : switch_table()) sw.*s.member = true;
  sw.ddp = false;
  return sw;
}
}  // namespace

Rung parse_rung(const std::string& spec, const char* option) {
  for (const auto& r : ladder_rungs())
    if (r.name == spec) return r;
  auto bad = [&](const std::string& why) {
    return ConfigError(fmt::format("{}: '{}' is not a rung ({}); expected one of: {}, or "
                                   "fp32+SWITCH[+SWITCH...] or top-SWITCH",
                                   option, spec, why, valid_names()));
  };
  if (spec.rfind("fp32+", 0) == 0) {
    Rung r{spec, "", Switches{}};
    size_t start = 5;
    while (start <= spec.size()) {
      const size_t end = std::min(spec.find('+', start), spec.size());
      const std::string name = spec.substr(start, end - start);
      const SwitchInfo* s = find_switch(name);
      if (!s) throw bad(fmt::format("unknown switch '{}'", name));
      r.sw.*s->member = true;
      r.change += fmt::format("{}+ {}", r.change.empty() ? "" : ", ", s->what);
      start = end + 1;
    }
    return r;
  }
  if (spec.rfind("top-", 0) == 0) {
    const SwitchInfo* s = find_switch(spec.substr(4));
    if (!s || s->member == &Switches::ddp) throw bad("unknown switch after 'top-'");
    Rung r{spec, fmt::format("top rung without: {}", s->what), top_switches()};
    r.sw.*s->member = false;
    return r;
  }
  throw bad("unknown name");
}

std::vector<Rung> ablation_rungs() {
  std::vector<Rung> out = {ladder_rungs().front()};
  for (const auto& s : switch_table())
    if (s.member != &Switches::ddp) out.push_back(parse_rung(fmt::format("fp32+{}", s.name)));
  out.push_back({"top", "all single-process switches", top_switches()});
  for (const auto& s : switch_table())
    if (s.member != &Switches::ddp) out.push_back(parse_rung(fmt::format("top-{}", s.name)));
  return out;
}

// Tolerances on the relative loss difference to fp32 over the first steps:
//  - fp32-exact (fused ops, flash, vocab-pad, fused AdamW, accumulation): the
//    same maths with a different summation order; differences stay ~1e-7 to
//    1e-6 over a few steps, so 1e-5 catches any real change.
//  - tf32: matmul inputs rounded to 10 mantissa bits (TF32) or 8 (oneDNN's
//    bf16 fp32-math on CPU); the loss moves by ~1e-4 to 1e-3; 5e-3 bounds it.
//  - bf16: activations in bf16 (8 significant bits, unit roundoff
//    u = 2^-8 = 3.9e-3) through the whole forward. Independent rounding
//    errors average out over the model's gradient components: honest steps
//    measured 1.7e-3 to 3.8e-3 (H100, H200, CPU; grad norm, the larger).
//    1e-2 (~2.5u) keeps >= 2.6x margin over those and fails a systematic
//    error such as bf16 split-K reductions in cuBLAS (2.2e-2; README).
double parity_rtol(const Switches& sw) {
  if (sw.bf16) return 1e-2;
  if (sw.tf32) return 5e-3;
  return 1e-5;
}

const char* parity_class(const Switches& sw) {
  if (sw.bf16) return "bf16";
  if (sw.tf32) return "tf32";
  return "fp32-exact";
}

Switches numerics_in_effect(Switches sw, const nlohmann::json& described) {
  auto effective = [&](const char* name) {
    return described.is_object() && described.contains(name) && described[name].is_object() &&
           described[name].value("effective", false);
  };
  sw.tf32 = sw.tf32 && effective("tf32");
  sw.bf16 = sw.bf16 && effective("bf16");
  return sw;
}

void to_json(nlohmann::json& j, const Switches& s) {
  j = nlohmann::json::object();
  for (const auto& info : switch_table()) j[info.name] = s.*info.member;
}

void from_json(const nlohmann::json& j, Switches& s) {
  for (const auto& info : switch_table()) s.*info.member = j.at(info.name).get<bool>();
}

}  // namespace ladder
