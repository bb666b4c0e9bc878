// variants/config_fields.cpp: the table of RunConfig's fields and what is
// derived from it (see config_fields.h).
#include "variants/config_fields.h"

#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profiler/ranges/range.h"
#include "profiler/trace/schedule.h"
#include "variants/planners/attention_plan.h"
#include "variants/planners/gemm_plan.h"

namespace ladder {

namespace {

using json = nlohmann::json;

double as_double(const FieldValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return double(*i);
  return std::get<double>(v);
}

// The C++ member type -> the field's kind and its FieldValue.
template <class T>
constexpr FieldKind kind_of() {
  if constexpr (std::is_same_v<T, bool>) return FieldKind::kFlag;
  else if constexpr (std::is_integral_v<T>) return FieldKind::kInt;
  else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, std::optional<double>>) return FieldKind::kNumber;
  else {
    static_assert(std::is_same_v<T, std::string>, "a config field is an integer, a number, text or a flag");
    return FieldKind::kText;
  }
}

template <class T>
FieldValue to_value(const T& x) {
  if constexpr (std::is_same_v<T, bool>) return x;
  else if constexpr (std::is_integral_v<T>) return int64_t(x);
  else if constexpr (std::is_same_v<T, std::optional<double>>) return x ? FieldValue(*x) : FieldValue();
  else return FieldValue(x);
}

template <class T>
void from_value(const FieldValue& v, T& x) {
  if constexpr (std::is_same_v<T, bool>) x = std::get<bool>(v);
  else if constexpr (std::is_integral_v<T>) x = T(std::get<int64_t>(v));
  else if constexpr (std::is_same_v<T, double>) x = as_double(v);
  else if constexpr (std::is_same_v<T, std::optional<double>>)
    x = std::holds_alternative<std::monostate>(v) ? std::nullopt : std::optional<double>(as_double(v));
  else x = std::get<std::string>(v);
}

FieldBounds above(double lo) { return {lo, std::nullopt, true, false, {}}; }
FieldBounds at_least(double lo) { return {lo, std::nullopt, false, false, {}}; }
FieldBounds between(double lo, double hi, bool hi_open = false) { return {lo, hi, false, hi_open, {}}; }
FieldBounds one_of(std::vector<std::string> choices) { return {std::nullopt, std::nullopt, false, false, std::move(choices)}; }
FieldBounds anything() { return {}; }

// One table entry: the declaration, then what is not the common case.
struct Decl {
  ConfigField f;
  Decl& no_default() { f.show_default = false; return *this; }
  Decl& absent(void (*fn)(RunConfig&)) { f.if_absent = fn; return *this; }
  Decl& optional_in_json() { return absent([](RunConfig&) {}); }  // absent: keep the default
  Decl& then(void (*fn)(RunConfig&)) { f.after_set = fn; return *this; }
  Decl& json_at(std::string path) { f.json_path = std::move(path); return *this; }
  Decl& sets(bool v) { f.flag_value = v; return *this; }
  Decl& null_when_empty() { f.empty_is_null = true; return *this; }
  Decl& path() { f.is_path = true; return *this; }
};

// `ref` is a generic lambda returning a reference to the member of a
// (const or not) RunConfig; the kind and the accessors follow from it.
template <class Ref>
Decl field(FieldGroup g, std::string name, std::string option, std::string metavar, std::string help,
           FieldBounds bounds, Ref ref) {
  using T = std::decay_t<decltype(ref(std::declval<RunConfig&>()))>;
  ConfigField f;
  f.json_path = g == FieldGroup::kRun ? "/" + name : fmt::format("/{}/{}", group_name(g), name);
  f.name = std::move(name);
  f.option = std::move(option);
  f.group = g;
  f.kind = kind_of<T>();
  f.metavar = std::move(metavar);
  f.help = std::move(help);
  f.bounds = std::move(bounds);
  f.show_default = f.kind != FieldKind::kFlag;
  f.get = [ref](const RunConfig& c) { return to_value(ref(c)); };
  f.set = [ref](RunConfig& c, const FieldValue& v) { from_value(v, ref(c)); };
  return Decl{std::move(f)};
}

constexpr auto kModel = FieldGroup::kModel;
constexpr auto kTrain = FieldGroup::kTrain;
constexpr auto kDdp = FieldGroup::kDdp;
constexpr auto kData = FieldGroup::kData;
constexpr auto kRun = FieldGroup::kRun;

std::vector<ConfigField> make_fields() {
  // clang-format off
  std::vector<Decl> d = {
    // The shape; the preset gives the defaults.
    field(kRun, "batch", "--batch", "B", "micro-batch size, sequences per micro-step (default: the preset's)",
          above(0), [](auto& c) -> auto& { return c.batch; }).no_default(),
    field(kRun, "seq", "--seq", "T", "sequence length, <= block size (default: the preset's)",
          above(0), [](auto& c) -> auto& { return c.seq; }).no_default(),
    field(kRun, "total_batch", "--total-batch", "TOKENS", "tokens per optimizer step for grad-accum (default: the preset's)",
          above(0), [](auto& c) -> auto& { return c.total_batch; }).no_default(),
    field(kModel, "n_layer", "--n-layer", "L", "layer count (default: the preset's)",
          above(0), [](auto& c) -> auto& { return c.model.n_layer; }).no_default(),
    field(kModel, "n_head", "--n-head", "H", "head count (default: the preset's)",
          above(0), [](auto& c) -> auto& { return c.model.n_head; }).no_default(),
    field(kModel, "n_embd", "--n-embd", "C", "width, a multiple of the head count (default: the preset's)",
          above(0), [](auto& c) -> auto& { return c.model.n_embd; }).no_default(),
    field(kModel, "block_size", "--block-size", "N", "block size, the longest sequence (default: the preset's)",
          above(0), [](auto& c) -> auto& { return c.model.block_size; }).no_default(),
    field(kModel, "vocab_size", "--vocab", "V", "vocabulary size (default: the preset's)",
          above(0), [](auto& c) -> auto& { return c.model.vocab_size; }).no_default(),
    // The measurement.
    field(kRun, "steps", "--steps", "N", "measured steps",
          above(0), [](auto& c) -> auto& { return c.steps; }),
    field(kRun, "warmup", "--warmup", "N",
          "warmup steps excluded from figures: exactly N (default: at least 2, then until the last 3 steps' dt "
          "agree within 5 %, at most 20)",
          at_least(0), [](auto& c) -> auto& { return c.warmup; })
        .no_default().then([](RunConfig& c) { c.warmup_max = c.warmup; }),  // alone: a fixed warmup
    field(kRun, "warmup_max", "--warmup-max", "M", "warm up until stable, at most M steps (with --warmup N, N is the minimum)",
          at_least(0), [](auto& c) -> auto& { return c.warmup_max; })
        .optional_in_json(),  // configs written before warm-up until stable: fixed (warmup's then)
    field(kRun, "warmup_tolerance_pct", "--warmup-tolerance", "PCT",
          "warm-up is stable when the last 3 steps' dt lie within PCT % of their minimum",
          above(0), [](auto& c) -> auto& { return c.warmup_tolerance_pct; }).optional_in_json(),
    field(kRun, "seed", "--seed", "S", "seed for weights and synthetic data",
          at_least(0), [](auto& c) -> auto& { return c.seed; }),
    field(kRun, "threads", "--threads", "N", "intra-op CPU threads; 0: all cores (split between a host's ranks)",
          at_least(0), [](auto& c) -> auto& { return c.threads; }),
    // The optimiser and schedule.
    field(kTrain, "max_lr", "--lr", "X", "peak learning rate",
          above(0), [](auto& c) -> auto& { return c.train.max_lr; }),
    field(kTrain, "min_lr_ratio", "--min-lr-ratio", "X", "cosine floor as a fraction of --lr",
          between(0, 1), [](auto& c) -> auto& { return c.train.min_lr_ratio; }),
    field(kTrain, "lr_warmup_steps", "--lr-warmup", "N", "linear LR warmup steps",
          at_least(0), [](auto& c) -> auto& { return c.train.lr_warmup_steps; }),
    field(kTrain, "lr_decay_steps", "--lr-decay-steps", "N", "cosine horizon; 0: warmup + steps",
          at_least(0), [](auto& c) -> auto& { return c.train.lr_decay_steps; }),
    field(kTrain, "beta1", "", "X", "AdamW beta1",
          between(0, 1, true), [](auto& c) -> auto& { return c.train.beta1; }).json_at("/train/betas/0"),
    field(kTrain, "beta2", "", "X", "AdamW beta2",
          between(0, 1, true), [](auto& c) -> auto& { return c.train.beta2; }).json_at("/train/betas/1"),
    field(kTrain, "eps", "", "X", "AdamW epsilon",
          above(0), [](auto& c) -> auto& { return c.train.eps; }),
    field(kTrain, "weight_decay", "--weight-decay", "X", "AdamW weight decay on 2D+ tensors",
          at_least(0), [](auto& c) -> auto& { return c.train.weight_decay; }),
    field(kTrain, "grad_clip", "--grad-clip", "X", "global grad-norm clip",
          above(0), [](auto& c) -> auto& { return c.train.grad_clip; }),
    field(kRun, "peak_tflops_override", "--peak-tflops", "X", "peak TFLOPS for MFU, overriding the datasheet table",
          above(0), [](auto& c) -> auto& { return c.peak_tflops; }).no_default(),
    // The ddp rung.
    field(kDdp, "bucket_cap_mb", "--bucket-cap-mb", "MB", "ddp: gradient bucket size (PyTorch DDP's default)",
          above(0), [](auto& c) -> auto& { return c.ddp.bucket_cap_mb; }),
    field(kDdp, "first_timeout_s", "--ddp-first-timeout", "SECONDS", "ddp: collective timeout of the first step",
          above(0), [](auto& c) -> auto& { return c.ddp.first_timeout_s; }),
    field(kDdp, "timeout_s", "--ddp-timeout", "SECONDS", "ddp: collective timeout from the second step",
          above(0), [](auto& c) -> auto& { return c.ddp.timeout_s; }),
    field(kDdp, "connect_timeout_s", "--dist-connect-timeout", "SECONDS", "ddp: time allowed to reach MASTER_ADDR",
          above(0), [](auto& c) -> auto& { return c.ddp.connect_timeout_s; }),
    // The data (configs from before --data: synthetic).
    field(kData, "path", "--data", "PATH|GLOB",
          "token shards (llm.c .bin, or raw uint16 with --data-format raw-u16) instead of synthetic tokens",
          anything(), [](auto& c) -> auto& { return c.data.path; })
        .no_default().null_when_empty().path().optional_in_json(),
    field(kData, "format", "--data-format", "auto|raw-u16", "shard format: auto (llm.c header) or raw-u16 (nanoGPT)",
          one_of({"auto", "raw-u16"}), [](auto& c) -> auto& { return c.data.format; }).optional_in_json(),
    field(kData, "prefetch", "--no-prefetch", "", "make each batch in the step's data phase (no background producer)",
          anything(), [](auto& c) -> auto& { return c.data.prefetch; }).sets(false).optional_in_json(),
    // What the run records besides the figures.
    field(kRun, "breakdown", "--breakdown", "", "time data/forward/backward/optimizer (synchronises; perturbs dt)",
          anything(), [](auto& c) -> auto& { return c.breakdown; }),
    field(kRun, "fixed_batch", "--fixed-batch", "", "every step sees the same batch (overfitting checks)",
          anything(), [](auto& c) -> auto& { return c.fixed_batch; }),
    field(kRun, "profile", "--profile", "W,WU,A[,R]",
          "Kineto traces: wait W, warm up WU, record A steps, R cycles (default 1, 0 = until the end); steps "
          "count from 0, warmup included; <run>/<rung>/traces/rank<r>_step<s>.json",
          anything(), [](auto& c) -> auto& { return c.profile; })
        .no_default().null_when_empty().optional_in_json(),  // configs from before the profiler
    field(kRun, "layer_ranges", "--layer-ranges", "", "also name each layer in forward and backward (NVTX and Kineto ranges)",
          anything(), [](auto& c) -> auto& { return c.layer_ranges; }).optional_in_json(),
    field(kRun, "cpu_bf16", "--cpu-bf16", "auto|on|off",
          "bf16 rungs on a CPU: auto runs their matmuls in fp32 where the run's roofline measures bf16 matmuls "
          "slower than fp32's (emulated, or native but slower); on forces bf16 autocast; off never",
          one_of({"auto", "on", "off"}), [](auto& c) -> auto& { return c.cpu_bf16; })
        .absent([](RunConfig& c) { c.cpu_bf16 = "on"; }),  // configs from before --cpu-bf16 ran bf16 as asked
    field(kRun, "gemm_plan", "--gemm-plan", "auto|pytorch|lt|FILE",
          "how fused-linear's GEMMs run (CUDA: the epilogue sites; CPU: every site): auto times each site's "
          "candidates before the first step (PyTorch's ops, cuBLASLt's algorithms, dW into the flat buffer; "
          "cached per device, library, torch and shape) and keeps PyTorch's unless another is faster by 3 % "
          "(CPU: 5 %); pytorch or lt pins one way everywhere; FILE reruns a plan (a report.json or a plan from one)",
          anything(), [](auto& c) -> auto& { return c.gemm_plan; })
        .absent([](RunConfig& c) { c.gemm_plan = "lt"; }),  // configs from before the planner ran cuBLASLt's first
    field(kRun, "attention_plan", "--attention-plan", "auto|pytorch|flash|cudnn|efficient|math|explicit|flash-fp32",
          "the flash rung's attention: auto times forward and backward at the step's shape under each candidate "
          "(PyTorch's own SDPA pick and SDPA's flash backend; CUDA: cuDNN's and memory-efficient; CPU: SDPA's math "
          "backend, the explicit attention in the step's dtype, and flash on fp32 copies of bf16 inputs) before the "
          "first step, cached per device, library, torch and shape, and keeps PyTorch's unless another is faster by "
          "3 % (CPU: 5 %); a candidate's name pins it",
          one_of(attention_plan_values()), [](auto& c) -> auto& { return c.attention_plan; })
        .absent([](RunConfig& c) { c.attention_plan = "pytorch"; }),  // configs from before the planner: SDPA's pick
    field(kRun, "layer_norm_kernel", "--layer-norm-kernel", "auto|row",
          "fused-ln's CUDA kernels: auto takes the vector kernels (4 elements an access, the row in registers) "
          "where C is a multiple of 4 up to 2048 and the tensors are aligned, else the row kernels; row always "
          "takes the row kernels (one element an access)",
          one_of({"auto", "row"}), [](auto& c) -> auto& { return c.layer_norm_kernel; })
        .absent([](RunConfig& c) { c.layer_norm_kernel = "row"; }),  // configs from before the vector kernels
    field(kRun, "cross_entropy_kernel", "--cross-entropy-kernel", "batched|online",
          "fused-ce's CUDA kernel: batched takes a batch of logits at a time (their max, one rescale, exp as one "
          "FFMA and MUFU.EX2 a logit); online one logit at a time (expf; the kernel before 2026-11-28)",
          one_of({"batched", "online"}), [](auto& c) -> auto& { return c.cross_entropy_kernel; })
        .absent([](RunConfig& c) { c.cross_entropy_kernel = "online"; }),  // configs from before the batched kernel
  };
  // clang-format on
  std::vector<ConfigField> out;
  for (auto& decl : d) out.push_back(std::move(decl.f));
  return out;
}

std::string number_text(double x) { return fmt::format("{}", x); }

}  // namespace

const char* group_name(FieldGroup g) {
  switch (g) {
    case FieldGroup::kModel: return "model";
    case FieldGroup::kTrain: return "train";
    case FieldGroup::kDdp: return "ddp";
    case FieldGroup::kData: return "data";
    case FieldGroup::kRun: return "run";
  }
  return "?";
}

const std::vector<ConfigField>& config_fields() {
  static const std::vector<ConfigField> kFields = make_fields();
  return kFields;
}

const ConfigField* find_field(const std::string& name) {
  for (const auto& f : config_fields())
    if (f.name == name) return &f;
  return nullptr;
}

const ConfigField* find_field_by_option(const std::string& option) {
  for (const auto& f : config_fields())
    if (!f.option.empty() && f.option == option) return &f;
  return nullptr;
}

std::string expected_text(const ConfigField& f) {
  switch (f.kind) {
    case FieldKind::kFlag: return "true or false";
    case FieldKind::kText: {
      if (f.bounds.choices.empty()) return f.is_path ? "a path" : "text";
      std::string out = "one of: ";
      for (size_t i = 0; i < f.bounds.choices.size(); ++i) out += (i ? ", " : "") + f.bounds.choices[i];
      return out;
    }
    case FieldKind::kInt:
    case FieldKind::kNumber: break;
  }
  const std::string what = f.kind == FieldKind::kInt ? "an integer" : "a number";
  const FieldBounds& b = f.bounds;
  if (b.lo && b.hi)
    return fmt::format("{} in {}{}, {}{}", what, b.lo_open ? "(" : "[", number_text(*b.lo), number_text(*b.hi),
                       b.hi_open ? ")" : "]");
  if (b.lo) return fmt::format("{} {} {}", what, b.lo_open ? ">" : ">=", number_text(*b.lo));
  if (b.hi) return fmt::format("{} {} {}", what, b.hi_open ? "<" : "<=", number_text(*b.hi));
  return what;
}

std::string value_text(const FieldValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "null";
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return number_text(*d);
  return "'" + std::get<std::string>(v) + "'";
}

void check_field(const ConfigField& f, const FieldValue& v, const std::string& where) {
  const FieldBounds& b = f.bounds;
  if (f.kind == FieldKind::kInt || f.kind == FieldKind::kNumber) {
    if (std::holds_alternative<std::monostate>(v)) return;  // an unset optional
    const double x = as_double(v);
    if (!std::isfinite(x)) throw ConfigError(fmt::format("{}: got {}, expected a finite number", where, value_text(v)));
    const bool low = b.lo && (b.lo_open ? !(x > *b.lo) : !(x >= *b.lo));
    const bool high = b.hi && (b.hi_open ? !(x < *b.hi) : !(x <= *b.hi));
    if (low || high) throw ConfigError(fmt::format("{}: got {}, expected {}", where, value_text(v), expected_text(f)));
  } else if (f.kind == FieldKind::kText && !b.choices.empty()) {
    const std::string& s = std::get<std::string>(v);
    for (const auto& c : b.choices)
      if (s == c) return;
    throw ConfigError(fmt::format("{}: got {}, expected {}", where, value_text(v), expected_text(f)));
  }
}

FieldValue check_input(const ConfigField& f, FieldValue v, const std::string& where) {
  check_field(f, v, where);
  if (f.is_path) {
    const std::string& s = std::get<std::string>(v);
    if (s.empty()) throw ConfigError(fmt::format("{}: got '', expected a path", where));
    v = std::filesystem::absolute(s).string();  // children may run elsewhere
  }
  return v;
}

FieldValue input_from_json(const ConfigField& f, const nlohmann::json& v, const std::string& where) {
  FieldValue out;
  if (f.kind == FieldKind::kInt && (v.is_number_integer() || v.is_number_unsigned())) out = v.get<int64_t>();
  else if (f.kind == FieldKind::kNumber && v.is_number()) out = v.get<double>();
  else if (f.kind == FieldKind::kText && v.is_string()) out = v.get<std::string>();
  else if (f.kind == FieldKind::kFlag && v.is_boolean()) out = v.get<bool>();
  else throw ConfigError(fmt::format("{}: got {}, expected {}", where, v.dump(), expected_text(f)));
  return check_input(f, std::move(out), where);
}

void write_fields(const RunConfig& c, nlohmann::json& j) {
  for (const auto& f : config_fields()) {
    const FieldValue v = f.get(c);
    json value;
    if (const auto* b = std::get_if<bool>(&v)) value = *b;
    else if (const auto* i = std::get_if<int64_t>(&v)) value = *i;
    else if (const auto* d = std::get_if<double>(&v)) value = *d;
    else if (const auto* s = std::get_if<std::string>(&v); s && !(s->empty() && f.empty_is_null)) value = *s;
    j[json::json_pointer(f.json_path)] = std::move(value);  // monostate and null-when-empty text: null
  }
}

void read_fields(const nlohmann::json& j, RunConfig& c) {
  for (const auto& f : config_fields()) {
    const json::json_pointer ptr(f.json_path);
    if (!j.contains(ptr) && f.if_absent) {
      f.if_absent(c);
      continue;
    }
    const json& v = j.at(ptr);  // a required field: json::out_of_range names it
    FieldValue value;
    switch (f.kind) {
      case FieldKind::kInt: value = v.get<int64_t>(); break;
      case FieldKind::kNumber: value = v.is_null() ? FieldValue() : FieldValue(v.get<double>()); break;
      case FieldKind::kText: value = v.is_null() && f.empty_is_null ? std::string() : v.get<std::string>(); break;
      case FieldKind::kFlag: value = v.get<bool>(); break;
    }
    f.set(c, value);
    if (f.after_set) f.after_set(c);
  }
}

void FieldSettings::set(const std::string& name, FieldValue v) {
  if (!find_field(name)) throw std::logic_error("FieldSettings::set: no config field is named '" + name + "'");
  values_[name] = std::move(v);
}

const FieldValue* FieldSettings::find(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

void FieldSettings::fill_missing_from(const FieldSettings& lower) {
  for (const auto& [name, v] : lower.values_) values_.emplace(name, v);
}

void FieldSettings::apply(RunConfig& c) const {
  for (const auto& f : config_fields()) {
    const FieldValue* v = find(f.name);
    if (!v) continue;
    f.set(c, *v);
    if (f.after_set) f.after_set(c);
  }
}

// ---- RunConfig's validation and JSON form, from the table ------------------------

void validate_config(const RunConfig& c) {
  // Each field's own bounds, as declared (variants/config_fields.cpp); then
  // what depends on several fields.
  for (const auto& f : config_fields()) check_field(f, f.get(c), field_label(f));
  parse_gemm_plan_request(c.gemm_plan);  // auto, pytorch, lt, or a file holding a plan
  check_attention_plan_request(c.attention_plan, c.device);  // a CUDA backend needs a CUDA device
  if (c.warmup_max < c.warmup)
    throw ConfigError(fmt::format("--warmup-max: got {}, expected >= the minimum warmup {}", c.warmup_max, c.warmup));
  if (c.model.n_embd % c.model.n_head != 0)
    throw ConfigError(fmt::format("--n-embd: {} is not divisible by --n-head {}; expected a multiple "
                                  "of n_head so each head has n_embd/n_head channels",
                                  c.model.n_embd, c.model.n_head));
  if (c.seq > c.model.block_size)
    throw ConfigError(fmt::format("--seq: {} exceeds the block size {} of preset '{}'; expected "
                                  "<= {} (or raise --block-size)",
                                  c.seq, c.model.block_size, c.preset, c.model.block_size));
  if (c.sw.on(switches::grad_accum)) {
    const int64_t per_micro = c.batch * c.seq * c.world_size;
    if (c.total_batch <= 0 || c.total_batch % per_micro != 0)
      throw ConfigError(fmt::format(
          "--total-batch: {} tokens is not divisible by B*T*world = {}*{}*{} = {}; expected a "
          "positive multiple of {}",
          c.total_batch, c.batch, c.seq, c.world_size, per_micro, per_micro));
  }
  if (c.world_size < 1)
    throw ConfigError(fmt::format("world_size: got {}, expected >= 1", c.world_size));
  if (c.world_size > 1 && !c.sw.on(switches::ddp))
    throw ConfigError(fmt::format("world_size {}: rung '{}' has no ddp switch; only the ddp rung "
                                  "runs on several ranks",
                                  c.world_size, c.rung));
  if (c.data.path.empty() && c.data.format != "auto")
    throw ConfigError(fmt::format("--data-format {}: needs --data PATH|GLOB (the synthetic stream "
                                  "has no format)",
                                  c.data.format));
  if (c.rank < 0 || c.rank >= c.world_size)
    throw ConfigError(fmt::format("rank {} of world size {}: expected 0 <= rank < world size",
                                  c.rank, c.world_size));
  if (!c.profile.empty()) profiler::parse_schedule(c.profile, c.total_steps());
  if ((!c.profile.empty() || c.layer_ranges) && !profiler::compiled_in())
    throw ConfigError(fmt::format("{}: this build has the profiler compiled out (configured with "
                                  "-DLADDER_WITH_PROFILER=OFF); reconfigure with -DLADDER_WITH_PROFILER=ON",
                                  c.profile.empty() ? "--layer-ranges" : "--profile"));
}

// The fields of the table at their JSON paths, plus what the table leaves
// out: names, resolved values, derived figures.
void to_json(nlohmann::json& j, const RunConfig& r) {
  j = {{"preset", r.preset},
       {"rung", r.rung},
       {"switches", r.sw},
       {"micro_steps", r.micro_steps()},
       {"world_size", r.world_size},
       {"model_vocab", r.model_vocab()},
       {"device", r.device}};
  write_fields(r, j);
}

void from_json(const nlohmann::json& j, RunConfig& r) {
  j.at("preset").get_to(r.preset);
  j.at("rung").get_to(r.rung);
  j.at("switches").get_to(r.sw);
  j.at("world_size").get_to(r.world_size);
  j.at("device").get_to(r.device);
  read_fields(j, r);
}

}  // namespace ladder
