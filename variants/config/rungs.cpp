// variants/config/rungs.cpp: the ladder, rung-name parsing, ablations and the
// parity tolerances, all from the switch declarations (see rungs.h and
// variants/switches/switch.h).
#include "variants/config/rungs.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profiler/common/config_error.h"
#include "variants/config/switch_decl.h"

namespace ladder {

const std::vector<Rung>& ladder_rungs() {
  static const std::vector<Rung> kLadder = [] {
    std::vector<Rung> rungs = {{kBaseRungName, "FP32 baseline", Switches{}}};
    for (const SwitchDecl* s : all_switches()) {
      // A group's parts arrive with their group; extras are not rungs.
      if (s->role != SwitchRole::kRung && s->role != SwitchRole::kGroup) continue;
      Rung next = rungs.back();
      next.name = s->name;
      next.change = fmt::format("+ {}", s->what);
      next.sw.set(*s, true);
      rungs.push_back(next);
    }
    return rungs;
  }();
  return kLadder;
}

const Rung& base_rung() { return ladder_rungs().front(); }

const Rung& peer_base_rung() {
  // all_switches() holds exactly one peers_base, a rung (switch_decl.cpp's checks); its rung has its name.
  static const Rung& kBase = []() -> const Rung& {
    const auto& all = all_switches();
    const SwitchDecl* s = *std::find_if(all.begin(), all.end(), [](const SwitchDecl* d) { return d->peers_base; });
    const auto& ladder = ladder_rungs();
    return *std::find_if(ladder.begin(), ladder.end(), [&](const Rung& r) { return r.name == s->name; });
  }();
  return kBase;
}

const SwitchDecl* same_rows_parity_switch(const Switches& sw) {
  for (const SwitchDecl* s : all_switches())
    if (s->parity_same_rows && sw.on(*s)) return s;
  return nullptr;
}

bool rung_runnable(const Rung& r, const std::string& device, std::string* why_not) {
  const bool cuda = device.rfind("cuda", 0) == 0;
  if (r.varies && r.varies->cuda_only && !cuda) {
    if (why_not)
      *why_not = fmt::format("{} is CUDA only: on a CPU this rung would run what {} runs", r.varies->name,
                             r.name.rfind("top-", 0) == 0 ? "top" : kBaseRungName);
    return false;
  }
#ifndef LADDER_WITH_NCCL
  if (r.sw.on(switches::ddp) && cuda) {
    if (why_not) *why_not = "the ddp rung on CUDA needs NCCL, and this build has none (see `ladder version`)";
    return false;
  }
#endif
  return true;
}

namespace {
std::string valid_names() {
  std::string names;
  for (const auto& r : ladder_rungs()) names += (names.empty() ? "" : ", ") + r.name;
  std::string others;
  for (const SwitchDecl* s : all_switches())
    if (s->role == SwitchRole::kPart || s->role == SwitchRole::kExtra)
      others += fmt::format("{}{}", others.empty() ? "" : ", ", s->name);
  return fmt::format("{}; switches beyond the rungs, for composites: {}", names, others);
}

// The top rung a single process can run: every rung and part, but not ddp
// and not the extras (which go beyond the ladder).
Switches top_switches() {
  Switches sw;
  for (const SwitchDecl* s : all_switches())
    if (s->role != SwitchRole::kExtra) sw.set(*s, true);
  sw.set(switches::ddp, false);
  return sw;
}

bool needs_nothing(const SwitchDecl& s) { return s.needs[0] == nullptr; }
bool is_ddp(const SwitchDecl& s) { return &s == &switches::ddp; }
// A switch that acts on the ddp rung only (zero1): a single process has nothing for it to do.
bool needs_ddp(const SwitchDecl& s) {
  for (const SwitchDecl* n : s.needs)
    if (n == &switches::ddp) return true;
  return false;
}

// The base of a composite: a ladder rung's switches, or the top rung's.
const Switches* base_switches(const std::string& name) {
  static const Switches kTop = top_switches();
  if (name == "top") return &kTop;
  for (const auto& r : ladder_rungs())
    if (r.name == name) return &r.sw;
  return nullptr;
}
}  // namespace

Rung parse_rung(const std::string& spec, const char* option) {
  for (const auto& r : ladder_rungs())
    if (r.name == spec) return r;
  // The top single-process rung by itself, as ablation runs it (and a partial
  // ablation names it: --rungs top,top-fused-ln,...).
  if (spec == "top") return {"top", "all single-process switches", top_switches()};
  auto bad = [&](const std::string& why) {
    return ConfigError(fmt::format("{}: '{}' is not a rung ({}); expected one of: {}, or "
                                   "RUNG+SWITCH[+SWITCH...] (fp32+flash, ddp+X, top+X), top or top-SWITCH",
                                   option, spec, why, valid_names()));
  };
  if (spec.empty()) throw bad("an empty name");
  const size_t plus = spec.find('+');
  if (plus != std::string::npos) {
    const std::string base_name = spec.substr(0, plus);
    const Switches* base = base_switches(base_name);
    if (!base) throw bad(fmt::format("'{}' before the first '+' is not a rung or top", base_name));
    Rung r{spec, "", *base};
    size_t start = plus + 1;
    int count = 0;
    while (start <= spec.size()) {
      const size_t end = std::min(spec.find('+', start), spec.size());
      const std::string name = spec.substr(start, end - start);
      const SwitchDecl* s = find_switch(name);
      if (!s) throw bad(fmt::format("unknown switch '{}'", name));
      if (r.sw.on(*s)) throw bad(fmt::format("'{}' is already on in {}", name, base_name));
      r.sw.set(*s, true);
      r.change += fmt::format("{}+ {}", r.change.empty() ? "" : ", ", s->what);
      r.varies = ++count == 1 ? s : nullptr;
      start = end + 1;
    }
    return r;
  }
  if (spec.rfind("top-", 0) == 0) {
    const SwitchDecl* s = find_switch(spec.substr(4));
    if (!s || is_ddp(*s) || s->role == SwitchRole::kExtra) throw bad("unknown switch after 'top-'");
    Rung r{spec, fmt::format("top rung without: {}", s->what), top_switches(), s};
    r.sw.set(*s, false);
    return r;
  }
  throw bad("unknown name");
}

std::vector<Rung> ablation_rungs() {
  std::vector<Rung> out = {ladder_rungs().front()};
  for (const SwitchDecl* s : all_switches())
    if (!is_ddp(*s) && needs_nothing(*s)) out.push_back(parse_rung(fmt::format("fp32+{}", s->name)));
  out.push_back(parse_rung("top"));
  for (const SwitchDecl* s : all_switches()) {
    if (is_ddp(*s) || needs_ddp(*s)) continue;  // the top is one process
    // A rung or part left out of the top; an extra added to it.
    out.push_back(parse_rung(fmt::format(s->role == SwitchRole::kExtra ? "top+{}" : "top-{}", s->name)));
  }
  return out;
}

std::vector<Rung> memory_rungs() {
  std::vector<Rung> out = {ladder_rungs().front()};
  std::vector<const SwitchDecl*> extras;
  for (const SwitchDecl* s : all_switches())
    if (s->memory_mode) extras.push_back(s);
  for (const SwitchDecl* s : extras)
    if (!needs_ddp(*s)) out.push_back(parse_rung(fmt::format("fp32+{}", s->name)));
  out.push_back(parse_rung("ddp"));
  std::string all = "ddp";
  for (const SwitchDecl* s : extras) {
    out.push_back(parse_rung(fmt::format("ddp+{}", s->name)));
    all += fmt::format("+{}", s->name);
  }
  if (extras.size() > 1) out.push_back(parse_rung(all));
  return out;
}

Numerics loosest_numerics(const Switches& sw) {
  Numerics n = Numerics::kFp32Exact;
  for (const SwitchDecl* s : all_switches())
    if (s->role != SwitchRole::kGroup && sw.on(*s) && s->numerics > n) n = s->numerics;
  return n;
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
//    error such as bf16 split-K reductions in cuBLAS (2.2e-2; variants/README.md).
double parity_rtol(const Switches& sw) {
  switch (loosest_numerics(sw)) {
    case Numerics::kBf16: return 1e-2;
    case Numerics::kTf32: return 5e-3;
    case Numerics::kFp32Exact: break;
  }
  return 1e-5;
}

const char* parity_class(const Switches& sw) {
  switch (loosest_numerics(sw)) {
    case Numerics::kBf16: return "bf16";
    case Numerics::kTf32: return "tf32";
    case Numerics::kFp32Exact: break;
  }
  return "fp32-exact";
}

Switches numerics_in_effect(Switches sw, const SwitchEffects& described) {
  for (const SwitchDecl* s : all_switches()) {
    if (s->role == SwitchRole::kGroup || s->numerics == Numerics::kFp32Exact || !sw.on(*s)) continue;
    sw.set(*s, took_effect(described, s->name));
  }
  return sw;
}

}  // namespace ladder
