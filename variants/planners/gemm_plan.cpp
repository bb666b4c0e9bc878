// variants/planners/gemm_plan.cpp: see gemm_plan.h.
#include "variants/planners/gemm_plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <numeric>

#include <fmt/format.h>

#include "profiler/common/config_error.h"
#include "variants/planners/plan_common.h"

namespace ladder {

using nlohmann::json;

namespace {

constexpr GemmRole kRoles[] = {GemmRole::kForwardBias, GemmRole::kForwardBiasGelu, GemmRole::kWeightBiasGrad,
                               GemmRole::kInputGradDgelu, GemmRole::kForward, GemmRole::kInputGrad,
                               GemmRole::kWeightGrad};

[[noreturn]] void bad(const std::string& where, const std::string& field, const std::string& got,
                      const std::string& expected) {
  throw ConfigError(fmt::format("{}: {} is {}; expected {}", where, field, got, expected));
}

// j[name] as T, or ConfigError naming the file and the field.
template <typename T>
T get(const json& j, const char* name, const std::string& where, const std::string& path, const char* expected) {
  const std::string field = path + "/" + name;
  if (!j.is_object() || !j.contains(name)) bad(where, field, "missing", expected);
  try {
    return j.at(name).get<T>();
  } catch (const json::exception&) {
    bad(where, field, j.at(name).dump(), expected);
  }
}

// A role by its name and, where two share one ("forward": with a bias or
// without), its epilogue ("" in a file without one: the first).
std::optional<GemmRole> role_named(const std::string& name, const std::string& epilogue) {
  for (GemmRole r : kRoles)
    if (GemmSite{"", r}.role_name() == name && (epilogue.empty() || GemmSite{"", r}.epilogue() == epilogue)) return r;
  return std::nullopt;
}

GemmCandidateSection candidate_section(const CandidateResult& c) {
  GemmCandidateSection out;
  out.choice = c.choice.label();
  out.ran = c.ran;
  if (!c.ran) out.why_not = c.why_not;
  if (c.ran) {
    out.median_ms = c.median_ms;
    out.ms = c.ms;
  }
  if (!c.algo.is_null()) out.algo = c.algo;
  return out;
}

GemmSiteSection site_section(const SitePlan& s) {
  GemmSiteSection out;
  out.site = s.site.name();
  out.layer = s.site.layer;
  out.role = s.site.role_name();
  out.epilogue = s.site.epilogue();
  out.m = s.site.m();
  out.n = s.site.n();
  out.k = s.site.k();
  out.transa = s.site.transa();
  out.transb = s.site.transb();
  out.rows = s.site.rows;
  out.in = s.site.in;
  out.out = s.site.out;
  out.per_step = s.site.per_step;
  out.choice = s.choice.label();
  out.reason = s.reason;
  for (const auto& c : s.candidates) out.candidates.push_back(candidate_section(c));
  return out;
}

GemmChoice choice_from_json(const json& j, const std::string& where, const std::string& path) {
  const auto label = get<std::string>(j, "choice", where, path, "a choice such as \"pytorch\" or \"lt#1\"");
  const auto choice = parse_choice(label);
  if (!choice)
    bad(where, path + "/choice", "\"" + label + "\"",
        "pytorch, lt#R, lt-split-bias#R, lt-into-grad#R, lt-into-grad-bgradb#R, into-grad or onednn");
  return *choice;
}

CandidateResult candidate_from_json(const json& j, const std::string& where, const std::string& path) {
  CandidateResult c;
  c.choice = choice_from_json(j, where, path);
  c.ran = get<bool>(j, "ran", where, path, "true or false");
  c.why_not = j.value("why_not", "");
  c.median_ms = j.value("median_ms", 0.0);
  c.ms = j.value("ms", std::vector<double>{});
  c.algo = j.value("algo", json());
  return c;
}

SitePlan site_from_json(const json& j, const std::string& where, const std::string& path) {
  SitePlan s;
  s.site.layer = get<std::string>(j, "layer", where, path, "a layer name such as \"mlp.c_fc\"");
  const auto role_text = get<std::string>(j, "role", where, path, "a role name");
  const auto role = role_named(role_text, j.value("epilogue", ""));
  if (!role)
    bad(where, path + "/role", "\"" + role_text + "\" with epilogue " + j.value("epilogue", "none"),
        "forward (BIAS or DEFAULT), forward+gelu, weight+bias grad, input grad+dgelu, input grad or weight grad");
  s.site.role = *role;
  s.choice = choice_from_json(j, where, path);
  s.reason = j.value("reason", "");
  // The linear's shape as recorded (m, n, k follow from it), for the match against the run's sites.
  s.site.rows = get<int64_t>(j, "rows", where, path, "an integer (B*T)");
  s.site.in = get<int64_t>(j, "in", where, path, "an integer");
  s.site.out = get<int64_t>(j, "out", where, path, "an integer");
  s.site.per_step = j.value("per_step", int64_t(0));
  const json cands = j.value("candidates", json::array());
  for (size_t i = 0; i < cands.size(); ++i)
    s.candidates.push_back(candidate_from_json(cands.at(i), where, fmt::format("{}/candidates/{}", path, i)));
  return s;
}

}  // namespace

const char* method_name(GemmMethod m) {
  switch (m) {
    case GemmMethod::kPytorch: return "pytorch";
    case GemmMethod::kLt: return "lt";
    case GemmMethod::kLtSplitBias: return "lt-split-bias";
    case GemmMethod::kLtIntoGrad: return "lt-into-grad";
    case GemmMethod::kLtIntoGradBgradb: return "lt-into-grad-bgradb";
    case GemmMethod::kIntoGrad: return "into-grad";
    case GemmMethod::kOnednn: return "onednn";
  }
  return "?";
}

bool method_on_device(GemmMethod m, bool cuda) {
  if (m == GemmMethod::kPytorch) return true;
  const bool cpu_method = m == GemmMethod::kIntoGrad || m == GemmMethod::kOnednn;
  return cpu_method != cuda;
}

std::optional<GemmMethod> parse_method(std::string_view name) {
  for (GemmMethod m : kGemmMethods)
    if (name == method_name(m)) return m;
  return std::nullopt;
}

std::string GemmChoice::label() const {
  return uses_lt() ? fmt::format("{}#{}", method_name(method), algo_rank) : method_name(method);
}

std::optional<GemmChoice> parse_choice(std::string_view label) {
  const size_t hash = label.find('#');
  const auto method = parse_method(label.substr(0, hash));
  if (!method) return std::nullopt;
  GemmChoice c{*method, 0};
  if (hash == std::string_view::npos) return c;
  if (!c.uses_lt()) return std::nullopt;  // only cuBLASLt's methods have an algorithm's rank
  const std::string rank(label.substr(hash + 1));
  if (rank.empty() || rank.size() > 3 || !std::all_of(rank.begin(), rank.end(), ::isdigit)) return std::nullopt;
  c.algo_rank = std::stoi(rank);
  return c;
}

bool method_applies(GemmMethod method, GemmRole role, bool into_grad_buffer) {
  switch (method) {
    case GemmMethod::kPytorch: return true;
    case GemmMethod::kLt: return has_epilogue(role);
    case GemmMethod::kLtSplitBias: return role == GemmRole::kWeightBiasGrad;
    case GemmMethod::kLtIntoGrad:
    case GemmMethod::kLtIntoGradBgradb: return role == GemmRole::kWeightBiasGrad && into_grad_buffer;
    case GemmMethod::kIntoGrad:
      return (role == GemmRole::kWeightBiasGrad || role == GemmRole::kWeightGrad) && into_grad_buffer;
    case GemmMethod::kOnednn: return true;
  }
  return false;
}

// ---- the key ---------------------------------------------------------------------------

GemmPlanKeySection GemmPlanKey::section() const {
  GemmPlanKeySection k{device, cublaslt, torch, dtype, n_embd, n_layer, rows, gelu_epilogue, into_grad, planner,
                       std::nullopt};
  if (vocab) k.vocab = vocab;
  return k;
}

json GemmPlanKey::to_json() const { return fields::to_json(section()); }

GemmPlanKey GemmPlanKey::from_json(const json& j, const std::string& where) {
  const std::string p = "/key";
  GemmPlanKey k;
  k.device = get<std::string>(j, "device", where, p, "a device name");
  k.cublaslt = get<std::string>(j, "cublaslt", where, p, "cuBLASLt's version (\"\" without CUDA)");
  k.torch = get<std::string>(j, "torch", where, p, "a torch version");
  k.dtype = get<std::string>(j, "dtype", where, p, "bf16, fp32 or tf32");
  k.n_embd = get<int64_t>(j, "n_embd", where, p, "an integer");
  k.n_layer = get<int64_t>(j, "n_layer", where, p, "an integer");
  k.rows = get<int64_t>(j, "rows", where, p, "an integer (B*T)");
  k.gelu_epilogue = get<bool>(j, "gelu_epilogue", where, p, "true or false");
  k.into_grad = get<bool>(j, "into_grad", where, p, "true or false");
  k.planner = j.contains("planner") ? get<int>(j, "planner", where, p, "an integer (the planner's version)") : 1;
  k.vocab = j.contains("vocab") ? get<int64_t>(j, "vocab", where, p, "an integer (the classifier's vocabulary)") : 0;
  return k;
}

std::string GemmPlanKey::id() const { return plan_key_id(device, to_json().dump()); }

// ---- the plan --------------------------------------------------------------------------

GemmChoice GemmPlan::choice_for(const std::string& layer, GemmRole role) const {
  for (const auto& s : sites)
    if (s.site.layer == layer && s.site.role == role) return s.choice;
  return {};
}

GemmPlanSection GemmPlan::section() const {
  GemmPlanSection out;
  out.mode = mode;
  out.source = source;
  out.key = key.section();
  out.margin = margin;
  out.reps = reps;
  out.planning_ms = planning_ms;
  out.workspace_bytes = int64_t(workspace_bytes);
  for (const auto& site : sites) out.sites.push_back(site_section(site));
  return out;
}

json GemmPlan::to_json() const { return fields::to_json(section()); }

GemmPlan GemmPlan::from_json(const json& j, const std::string& where) {
  if (!j.is_object()) bad(where, "the plan", j.type_name(), "an object with key and sites");
  GemmPlan p;
  p.mode = j.value("mode", "file");
  p.source = j.value("source", "");
  p.key = GemmPlanKey::from_json(j.contains("key") ? j.at("key") : json(), where);
  p.margin = j.value("margin", 0.0);
  p.reps = j.value("reps", 0);
  p.planning_ms = j.value("planning_ms", 0.0);
  p.workspace_bytes = j.value("workspace_bytes", uint64_t(0));
  if (!j.contains("sites") || !j.at("sites").is_array()) bad(where, "/sites", "missing", "an array of sites");
  for (size_t i = 0; i < j.at("sites").size(); ++i)
    p.sites.push_back(site_from_json(j.at("sites").at(i), where, fmt::format("/sites/{}", i)));
  return p;
}

// ---- the JSON's vocabulary (gemm_plan_section.h) ------------------------------------

std::string gemm_choice_pattern() {
  std::string plain, ranked;
  for (GemmMethod m : kGemmMethods) {
    std::string& to = GemmChoice{m, 0}.uses_lt() ? ranked : plain;
    to += (to.empty() ? "" : "|") + std::string(method_name(m));
  }
  return "^(" + plain + "|(" + ranked + ")#[0-9]+)$";
}

namespace {

// `names`, then each role's name by `name_of` (a role's name, or its
// epilogue's), each once, in the roles' order.
std::vector<json> names_of_roles(std::vector<json> names, const char* (GemmSite::*name_of)() const) {
  for (GemmRole r : kRoles) {
    const json name = (GemmSite{"", r}.*name_of)();
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

}  // namespace

std::vector<json> gemm_role_names() { return names_of_roles({}, &GemmSite::role_name); }

std::vector<json> gemm_epilogue_names() {
  return names_of_roles({"DGELU_BGRAD"}, &GemmSite::epilogue);  // DGELU_BGRAD: planner 2 and before
}

std::pair<int, int> lt_sites(const GemmPlan& p, bool gelu_roles) {
  int lt = 0, all = 0;
  for (const auto& s : p.sites) {
    const bool gelu = s.site.role == GemmRole::kForwardBiasGelu || s.site.role == GemmRole::kInputGradDgelu;
    if (gelu != gelu_roles) continue;
    ++all;
    lt += s.choice.uses_lt();
  }
  return {lt, all};
}

size_t choose_candidate(const std::vector<CandidateResult>& c, double margin, std::string* reason) {
  if (c.empty() || !c[0].ran || c[0].choice.method != GemmMethod::kPytorch)
    throw std::logic_error("choose_candidate: the first candidate must be PyTorch's ops, measured");
  return choose_fastest(c, margin, reason, [](const CandidateResult& r) { return r.choice.label(); });
}

void time_interleaved(std::vector<CandidateResult>& results, int reps,
                      const std::function<double(size_t)>& time_ms) {
  time_interleaved<CandidateResult>(results, reps, time_ms);
}

GemmPlan measure_plan(const std::vector<GemmSite>& sites, const GemmPlanKey& key, const CandidateSource& source,
                      const CandidateTimer& timer, double margin, int reps) {
  return measured_plan<GemmPlan>(key, margin, reps, [&](GemmPlan& p) {
    for (const GemmSite& site : sites) {
      std::vector<RunnableCandidate> cands = source(site);  // its operands live as long as these calls
      std::vector<CandidateResult> results;
      for (auto& c : cands) {
        if (c.result.ran) c.run();  // untimed: the first call's heuristic query and lazy set-up
        results.push_back(c.result);
      }
      time_interleaved(results, reps, [&](size_t i) { return timer(cands[i].run); });
      SitePlan sp{site, {}, "", {}};
      sp.choice = results[choose_candidate(results, margin, &sp.reason)].choice;
      sp.candidates = std::move(results);
      p.sites.push_back(std::move(sp));
    }
  });
}

// ---- --gemm-plan -----------------------------------------------------------------------

GemmPlanRequest parse_gemm_plan_request(const std::string& value) {
  if (value == "auto" || value == "pytorch" || value == "lt") return {value, "", {}};
  if (value.empty()) throw ConfigError("--gemm-plan: empty; expected auto, pytorch, lt or a plan FILE");
  return {"file", value, read_gemm_plan_file(value)};  // validate_config() reads it: a clear error before any rung runs
}

GemmPlan read_gemm_plan_file(const std::string& path) {
  const std::string where = "--gemm-plan " + path;
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("{}: cannot read the file; expected auto, pytorch, lt or a plan file "
                                         "(a gemm-plan JSON or a rung's report.json)", where));
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw ConfigError(fmt::format("{}: not JSON ({})", where, e.what()));
  }
  // A rung report holds its plan under "gemm_plan".
  if (j.is_object() && j.contains("gemm_plan")) {
    if (j.at("gemm_plan").is_null()) bad(where, "/gemm_plan", "null", "a plan (this rung ran no fused linears)");
    return GemmPlan::from_json(j.at("gemm_plan"), where);
  }
  return GemmPlan::from_json(j, where);
}

GemmPlan pinned_plan(const std::vector<GemmSite>& sites, const GemmPlanKey& key, GemmMethod method,
                     const std::string& mode) {
  GemmPlan p;
  p.mode = mode;
  p.source = "pinned";
  p.key = key;
  for (const auto& s : sites)
    p.sites.push_back({s, {method, 0}, fmt::format("pinned by --gemm-plan {}", mode), {}});
  return p;
}

GemmPlan plan_from_file(const GemmPlan& file_plan, const std::string& path, const std::vector<GemmSite>& sites,
                        const GemmPlanKey& key) {
  const std::string where = "--gemm-plan " + path;
  GemmPlan p = pinned_plan(sites, key, GemmMethod::kPytorch, "file");
  p.source = "file: " + path;
  if (!(file_plan.key == key))
    p.source += fmt::format(" (measured for {}, this run is {})", file_plan.key.to_json().dump(),
                            key.to_json().dump());
  for (auto& s : p.sites) {
    const auto it = std::find_if(file_plan.sites.begin(), file_plan.sites.end(), [&](const SitePlan& f) {
      return f.site.layer == s.site.layer && f.site.role == s.site.role;
    });
    if (it == file_plan.sites.end())
      bad(where, "/sites", "without " + s.site.name(), "every site of this run: " + s.site.describe());
    if (it->site.m() != s.site.m() || it->site.n() != s.site.n() || it->site.k() != s.site.k())
      bad(where, "the site " + s.site.name(), it->site.describe(), "this run's shape, " + s.site.describe());
    if (!method_applies(it->choice.method, s.site.role, key.into_grad))
      bad(where, "the site " + s.site.name() + "'s choice", it->choice.label(),
          "a method this run's site can take (lt-into-grad, lt-into-grad-bgradb and into-grad need flat-grads)");
    s.choice = it->choice;
    s.reason = "from the file: " + it->reason;
  }
  return p;
}

// ---- the cache -------------------------------------------------------------------------

std::filesystem::path gemm_plan_cache_dir() { return plan_cache_dir("gemm-plans"); }

std::optional<GemmPlan> load_cached_plan(const GemmPlanKey& key) {
  return load_cached_plan_of<GemmPlan>("gemm-plans", key, GemmPlan::from_json);
}

void save_cached_plan(const GemmPlan& plan) { save_cached_plan_of("gemm-plans", plan.key.id(), plan.to_json()); }

}  // namespace ladder
