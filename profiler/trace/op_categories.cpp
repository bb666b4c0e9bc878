// profiler/trace/op_categories.cpp: the category table and the two breakdowns
// (see op_categories.h).
#include "profiler/trace/op_categories.h"

#include "profiler/ranges/range.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <unordered_map>
#include <unordered_set>
#include <utility>


namespace ladder::profiler {

const char* category_key(Category c) {
  switch (c) {
    case Category::kGemm: return "gemm";
    case Category::kAttention: return "attention";
    case Category::kElementwiseNorm: return "elementwise_norm";
    case Category::kSoftmaxLoss: return "softmax_loss";
    case Category::kOptimizer: return "optimizer";
    case Category::kCommunication: return "communication";
    case Category::kMemcpyMemset: return "memcpy_memset";
    case Category::kIdleOther: return "idle_other";
  }
  return "?";
}

namespace {

// First match wins, so the order matters: "addmm" is GEMM before "add" is
// elementwise, "flash" is attention before "softmax" is loss, a Triton kernel
// fusing "add" is elementwise before "_to_copy" is a copy. Names are
// ATen operators (aten::addmm), autograd nodes (AddmmBackward0, also inside
// "autograd::engine::evaluate_function: ..."), ladder's fused ops
// (ladder::add_layer_norm) and CUDA kernel names (sm90_xmma_gemm_...,
// flash_fwd_kernel, vectorized_elementwise_kernel, ncclDevKernel_AllReduce...).
struct Rule {
  Category category;
  std::regex pattern;
};

const std::vector<Rule>& rules() {
  static const std::vector<Rule> kRules = [] {
    const auto icase = std::regex::icase | std::regex::optimize;
    std::vector<Rule> r;
    r.push_back({Category::kCommunication,
                 std::regex("nccl|gloo|c10d|allreduce|all_reduce|all-reduce|allgather|all_gather|"
                            "reduce_scatter|reducescatter|broadcast|alltoall|record_param_comms",
                            icase)});
    r.push_back({Category::kOptimizer, std::regex("adam|multi_tensor_apply|fused_sgd", icase)});
    // cuDNN's SDPA backward runs two helper kernels of its own besides the
    // generated one: cudnn::fusion::compute_dot_do_o_specialized and
    // convert_dq_to_16bits (CUPTI's names are mangled: ...cudnn6fusion...).
    r.push_back({Category::kAttention,
                 std::regex("scaled_dot_product|flash|efficient_attention|fmha|sdpa|attention|cudnn_mha|"
                            "cudnn6fusion|cudnn::fusion",
                            icase)});
    r.push_back({Category::kSoftmaxLoss,
                 std::regex("softmax|cross_entropy|crossentropy|nll_loss|nllloss|logsumexp", icase)});
    r.push_back({Category::kGemm,
                 std::regex("gemm|addmm|bmm|matmul|linear|cutlass|xmma|nvjet|cublas|"
                            "(^|[^a-z])mm([^a-z]|backward|$)",
                            icase)});
    // torch.compile's generated kernels are named after the ops they fuse:
    // Triton's on a GPU (triton_red_fused__to_copy_native_layer_norm_backward_3),
    // C++ on a CPU (graph_0_cpp_fused_add_native_layer_norm_2, with the
    // compile peer's kernel ranges, scripts/peer.py). One that fuses
    // arithmetic with a cast is elementwise work, not a copy; the rules
    // above have taken those that fuse a loss (log_softmax, nll_loss) or
    // an addmm's bias (GEMM, as in ladder's own addmm).
    r.push_back({Category::kElementwiseNorm,
                 std::regex("^(triton_|(graph_[0-9]+_)?cpp_fused).*(norm|gelu|tanh|add|sub|mul|div|pow|exp|sqrt|"
                            "neg|where|sum|mean|relu|sigmoid|dropout|abs|embedding)",
                            icase)});
    r.push_back({Category::kMemcpyMemset,
                 std::regex("memcpy|memset|copy_|fill_|fillfunctor|zero_|_to_copy|(^|:)to$|zeros|"
                            "ones(_like)?$|clone|contiguous",
                            icase)});
    r.push_back({Category::kElementwiseNorm,
                 std::regex("norm|gelu|tanh|add|sub|mul|div|pow|exp|sqrt|neg|where|masked_fill|clamp|"
                            "elementwise|vectorized|unrolled|reduce|sum|mean|relu|sigmoid|dropout|abs",
                            icase)});
    return r;
  }();
  return kRules;
}

bool is_optimizer_range(const HostEvent& e) {
  return e.user_range && phase_of_range_name(e.name) == DeviceEvent::Phase::kOptimizer;
}
// The ddp rung's bucket ranges and ZeRO-1's parameter gather (inside the
// optimizer range, but communication).
bool is_comm_range(const HostEvent& e) {
  return e.user_range && phase_of_range_name(e.name) == DeviceEvent::Phase::kCommunication;
}

double ms(int64_t ns) { return double(ns) * 1e-6; }

bool is_attention_range(const HostEvent& e) { return e.user_range && e.name == names::kAttention; }

// The engine's event around one backward node ("autograd::engine::evaluate_function: BmmBackward0"),
// which carries the node's sequence number: its forward operator's.
bool is_backward_node(const HostEvent& e) {
  return !e.user_range && e.sequence_nr >= 0 && e.name.rfind("autograd::engine::evaluate_function:", 0) == 0;
}

}  // namespace

std::optional<Category> category_of_name(const std::string& name) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::optional<Category>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(name); it != cache.end()) return it->second;
  std::optional<Category> found;
  for (const auto& rule : rules()) {
    if (std::regex_search(name, rule.pattern)) {
      found = rule.category;
      break;
    }
  }
  cache.emplace(name, found);
  return found;
}

double Breakdown::sum_ms() const {
  double s = 0;
  for (double v : ms) s += v;
  return s;
}

Breakdown& Breakdown::operator+=(const Breakdown& o) {
  for (size_t i = 0; i < kCategoryCount; ++i) ms[i] += o.ms[i];
  span_ms += o.span_ms;
  idle_ms += o.idle_ms;
  other_ms += o.other_ms;
  overlap_ms += o.overlap_ms;
  busy_ms += o.busy_ms;
  events += o.events;
  has_phases = has_phases || o.has_phases;
  phases += o.phases;
  for (const auto& [name, v] : o.layer_ms) layer_ms[name] += v;
  kernels += o.kernels;
  memcpy_memset += o.memcpy_memset;
  for (const auto& [name, v] : o.other_by_name_ms) other_by_name_ms[name] += v;
  for (size_t i = 0; i < kCategoryCount; ++i)
    for (const auto& [name, t] : o.by_name[i]) {
      NameTotal& mine = by_name[i][name];
      mine.ms += t.ms;
      mine.calls += t.calls;
    }
  return *this;
}

DeviceEvent::Phase phase_of_range_name(std::string_view name) {
  using P = DeviceEvent::Phase;
  if (name == names::kData) return P::kData;
  if (name == names::kForward) return P::kForward;
  if (name == names::kBackward) return P::kBackward;
  if (name == names::kOptimizer) return P::kOptimizer;
  if (name.rfind("all-reduce bucket", 0) == 0 || name == names::kZero1Gather) return P::kCommunication;
  return P::kUnknown;
}

bool is_layer_range_name(std::string_view name) { return name.rfind("layer ", 0) == 0; }

namespace {

// The field of PhasesMs a phase counts in; none for kUnknown.
double PhasesMs::*phase_field(DeviceEvent::Phase p) {
  using P = DeviceEvent::Phase;
  switch (p) {
    case P::kData: return &PhasesMs::data;
    case P::kForward: return &PhasesMs::forward;
    case P::kBackward: return &PhasesMs::backward;
    case P::kOptimizer: return &PhasesMs::optimizer;
    case P::kCommunication: return &PhasesMs::communication;
    case P::kOutside: return &PhasesMs::outside;
    case P::kUnknown: break;
  }
  return nullptr;
}

// The phase field a phase range's name stands for, or none (communication
// ranges are not phases here: the category context counts them).
double PhasesMs::*phase_of_range(const HostEvent& e) {
  const DeviceEvent::Phase p = e.user_range ? phase_of_range_name(e.name) : DeviceEvent::Phase::kUnknown;
  return p == DeviceEvent::Phase::kCommunication ? nullptr : phase_field(p);
}

bool is_layer_range(const HostEvent& e) { return e.user_range && is_layer_range_name(e.name); }

// Time in `layer` within forward or backward ("forward/layer 3"); none in other phases.
void add_to_layer(Breakdown& b, double PhasesMs::*phase, const std::string& layer, double ms) {
  if (phase == &PhasesMs::forward || phase == &PhasesMs::backward)
    b.layer_ms[(phase == &PhasesMs::forward ? "forward/" : "backward/") + layer] += ms;
}

// An operator's own time to its phase (communication, wherever it ran, when
// `communication`), and to its layer: the innermost phase and layer ranges
// around it, walking up from `self` through its parents (`parent`: its
// parent's index in `nodes`, -1 at the top).
template <class Nodes>
void add_to_phase(Breakdown& b, const HostEvent* self, int parent, const Nodes& nodes, bool communication, double ms) {
  double PhasesMs::*phase = phase_of_range(*self);
  const HostEvent* layer = is_layer_range(*self) ? self : nullptr;
  for (int p = parent; p >= 0 && !phase; p = nodes[size_t(p)].parent) {
    const HostEvent& e = *nodes[size_t(p)].e;
    if (!layer && is_layer_range(e)) layer = &e;
    phase = phase_of_range(e);
  }
  b.phases.*(communication ? &PhasesMs::communication : phase ? phase : &PhasesMs::outside) += ms;
  if (layer) add_to_layer(b, phase, layer->name, ms);
}

// A device activity's time to the phase it was launched in, and its layer.
void add_device_phase(Breakdown& b, const DeviceEvent& e, bool communication, double ms) {
  b.has_phases = true;
  double PhasesMs::*field = communication ? &PhasesMs::communication : phase_field(e.phase);
  b.phases.*field += ms;
  if (!e.layer.empty()) add_to_layer(b, field, e.layer, ms);
}

// Marks the events that open attention's context: each attention range, and
// each backward node made for an operator inside one (by its sequence
// number, as the profiler links a backward node to its forward operator).
// `nodes` are ordered outer first, each parent before its children.
template <class Nodes>
void mark_attention(Nodes& nodes) {
  std::vector<char> inside(nodes.size(), 0);
  std::unordered_set<int64_t> forward;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const HostEvent& e = *nodes[i].e;
    nodes[i].attention = is_attention_range(e);
    inside[i] = char(nodes[i].attention || (nodes[i].parent >= 0 && inside[size_t(nodes[i].parent)]));
    if (inside[i] && !e.user_range && e.sequence_nr >= 0) forward.insert(e.sequence_nr);
  }
  if (forward.empty()) return;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!inside[i] && is_backward_node(*nodes[i].e) && forward.count(nodes[i].e->sequence_nr))
      nodes[i].attention = true;
}

}  // namespace

Breakdown host_breakdown(const std::vector<HostEvent>& events, int64_t begin_ns, int64_t end_ns) {
  Breakdown b;
  b.span_ms = ms(end_ns - begin_ns);
  struct Node {
    const HostEvent* e;
    int64_t start, end;
    int parent = -1;
    int64_t children_ns = 0;
    bool attention = false;  // opens attention's context: its range, or a backward node of an operator in it
  };
  std::vector<Node> nodes;
  for (const auto& e : events)
    if (e.start_ns >= begin_ns && e.end_ns <= end_ns && e.end_ns >= e.start_ns)
      nodes.push_back({&e, e.start_ns, e.end_ns});
  // Outer events first: by start, then the longer one.
  std::sort(nodes.begin(), nodes.end(), [](const Node& a, const Node& c) {
    return a.start != c.start ? a.start < c.start : a.end > c.end;
  });
  std::vector<int> stack;
  int64_t top_level_ns = 0;
  for (int i = 0; i < int(nodes.size()); ++i) {
    Node& n = nodes[size_t(i)];
    while (!stack.empty() && nodes[size_t(stack.back())].end <= n.start) stack.pop_back();
    if (!stack.empty()) {
      Node& p = nodes[size_t(stack.back())];
      n.end = std::min(n.end, p.end);  // events of one thread nest; clip if the clock says otherwise
      n.parent = stack.back();
      p.children_ns += n.end - n.start;
    } else {
      top_level_ns += n.end - n.start;
    }
    stack.push_back(i);
  }
  mark_attention(nodes);
  b.events = int64_t(nodes.size());
  for (const Node& n : nodes) {
    const int64_t self_ns = std::max<int64_t>(0, (n.end - n.start) - n.children_ns);
    std::optional<Category> cat;
    // Context: the innermost attention (its range, a backward node made for an operator in it, or an
    // operator named as attention: SDPA's math backend, ladder's explicit attention node), optimizer
    // range, communication range or communication op.
    for (const Node* c = &n; c && !cat; c = c->parent >= 0 ? &nodes[size_t(c->parent)] : nullptr) {
      if (c->attention || (!c->e->user_range && category_of_name(c->e->name) == Category::kAttention))
        cat = Category::kAttention;
      else if (is_optimizer_range(*c->e)) cat = Category::kOptimizer;
      else if (is_comm_range(*c->e)) cat = Category::kCommunication;
      else if (!c->e->user_range && category_of_name(c->e->name) == Category::kCommunication)
        cat = Category::kCommunication;
    }
    // Otherwise the innermost operator with a category.
    for (const Node* c = &n; c && !cat; c = c->parent >= 0 ? &nodes[size_t(c->parent)] : nullptr)
      if (!c->e->user_range) cat = category_of_name(c->e->name);
    if (cat) {
      b.ms[size_t(*cat)] += ms(self_ns);
    } else {
      b.other_ms += ms(self_ns);
      b.other_by_name_ms[n.e->name] += ms(self_ns);
    }
    NameTotal& t = b.by_name[size_t(cat.value_or(Category::kIdleOther))][n.e->name];
    t.ms += ms(self_ns);
    ++t.calls;
    add_to_phase(b, n.e, n.parent, nodes, cat == Category::kCommunication, ms(self_ns));
  }
  b.has_phases = true;
  b.busy_ms = ms(top_level_ns);
  b.idle_ms = ms(std::max<int64_t>(0, (end_ns - begin_ns) - top_level_ns));
  b.ms[size_t(Category::kIdleOther)] += b.idle_ms + b.other_ms;
  return b;
}

Breakdown device_breakdown(const std::vector<DeviceEvent>& events, int64_t begin_ns, int64_t end_ns) {
  Breakdown b;
  b.span_ms = ms(end_ns - begin_ns);
  std::vector<std::pair<int64_t, int64_t>> intervals;
  int64_t busy_ns = 0;
  for (const auto& e : events) {
    const int64_t s = std::max(e.start_ns, begin_ns), t = std::min(e.end_ns, end_ns);
    if (t <= s) continue;
    intervals.emplace_back(s, t);
    busy_ns += t - s;
    ++b.events;
    std::optional<Category> cat;
    if (e.kind != DeviceEvent::Kind::kKernel) {
      ++b.memcpy_memset;
      cat = Category::kMemcpyMemset;
    } else {
      ++b.kernels;
      cat = category_of_name(e.name);
      if (e.in_optimizer && cat != Category::kCommunication) cat = Category::kOptimizer;
    }
    if (cat) {
      b.ms[size_t(*cat)] += ms(t - s);
    } else {
      b.other_ms += ms(t - s);
      b.other_by_name_ms[e.name] += ms(t - s);
    }
    NameTotal& total = b.by_name[size_t(cat.value_or(Category::kIdleOther))][e.name];
    total.ms += ms(t - s);
    ++total.calls;
    if (e.phase != DeviceEvent::Phase::kUnknown) add_device_phase(b, e, cat == Category::kCommunication, ms(t - s));
  }
  std::sort(intervals.begin(), intervals.end());
  int64_t union_ns = 0, cur_s = 0, cur_e = -1;
  for (const auto& [s, t] : intervals) {
    if (s > cur_e) {
      if (cur_e > cur_s) union_ns += cur_e - cur_s;
      cur_s = s;
      cur_e = t;
    } else {
      cur_e = std::max(cur_e, t);
    }
  }
  if (cur_e > cur_s) union_ns += cur_e - cur_s;
  b.busy_ms = ms(union_ns);
  b.idle_ms = ms((end_ns - begin_ns) - union_ns);
  b.overlap_ms = ms(busy_ns - union_ns);
  b.ms[size_t(Category::kIdleOther)] += b.idle_ms + b.other_ms;
  return b;
}

std::string display_name(const std::string& name, size_t max_chars) {
  std::string out = name;
  if (name.rfind("_Z", 0) == 0) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status),
                                                     std::free);
    if (status == 0 && demangled) {
      out = demangled.get();
      // Drop the parameter list: the first '(' outside template arguments
      // and lambda names that is not "(anonymous namespace)".
      static const std::string kAnonymous = "(anonymous namespace)";
      int depth = 0;
      for (size_t i = 0; i < out.size(); ++i) {
        const char c = out[i];
        if (c == '<' || c == '{') {
          ++depth;
        } else if ((c == '>' || c == '}') && depth > 0) {
          --depth;
        } else if (c == '(' && depth == 0) {
          if (out.compare(i, kAnonymous.size(), kAnonymous) == 0) {
            i += kAnonymous.size() - 1;
            continue;
          }
          out.resize(i);
          break;
        }
      }
    }
  }
  if (max_chars >= 3 && out.size() > max_chars) out = out.substr(0, max_chars - 3) + "...";
  return out;
}

namespace {

// Every name of every category, whole (display_name'd without a limit: two
// raw names that read the same are one row), per step, largest first.
std::vector<KernelRow> kernel_rows(const Breakdown& total, double steps) {
  std::map<std::pair<std::string, size_t>, NameTotal> merged;
  for (size_t i = 0; i < kCategoryCount; ++i)
    for (const auto& [name, t] : total.by_name[i]) {
      NameTotal& m = merged[{display_name(name, std::string::npos), i}];
      m.ms += t.ms;
      m.calls += t.calls;
    }
  std::vector<KernelRow> rows;
  for (const auto& [key, t] : merged)
    rows.push_back({key.first, category_key(Category(key.second)), t.ms / steps, double(t.calls) / steps});
  std::stable_sort(rows.begin(), rows.end(), [](const KernelRow& a, const KernelRow& b) { return a.ms > b.ms; });
  return rows;
}

}  // namespace

OpBreakdownSection breakdown_section(const std::string& source, const Breakdown& total, int64_t steps, double dt_ms,
                                     size_t top_n) {
  const double n = double(std::max<int64_t>(steps, 1));
  auto pct = [&](double ms) { return dt_ms > 0 ? 100.0 * ms / dt_ms : 0.0; };
  OpBreakdownSection out;
  out.source = source;
  out.steps_profiled = steps;
  out.step_dt_ms = dt_ms;
  PerCategory<double> cat_ms, cat_pct;
  for (size_t i = 0; i < kCategoryCount; ++i) {
    cat_ms.values[i] = total.ms[i] / n;
    cat_pct.values[i] = pct(total.ms[i] / n);
  }
  // The five largest contributors to "other", so it is never a mystery (named as top_by_category names them).
  std::vector<std::pair<double, std::string>> other;
  for (const auto& [name, v] : total.other_by_name_ms) other.emplace_back(v / n, name);
  std::sort(other.rbegin(), other.rend());
  std::vector<NamedMs> top;
  for (size_t i = 0; i < other.size() && i < 5; ++i) top.push_back({display_name(other[i].second), other[i].first});
  PerCategory<std::vector<NamedTotal>> by_category;
  for (size_t i = 0; i < kCategoryCount; ++i) {
    std::vector<std::pair<double, const std::string*>> largest;
    for (const auto& [name, t] : total.by_name[i]) largest.emplace_back(t.ms, &name);
    std::sort(largest.begin(), largest.end(),
              [](const auto& a, const auto& c) { return a.first != c.first ? a.first > c.first : *a.second < *c.second; });
    for (size_t k = 0; k < largest.size() && k < top_n; ++k) {
      const NameTotal& t = total.by_name[i].at(*largest[k].second);
      by_category.values[i].push_back({display_name(*largest[k].second), t.ms / n, double(t.calls) / n});
    }
  }
  const double sum = total.sum_ms() / n;
  out.kernels = kernel_rows(total, n);
  if (total.has_phases) {
    PhasesMs per_step = total.phases;
    per_step /= n;
    out.phases_ms = per_step;
    // On a device the phases share the activities' time, which exceeds the
    // busy time (their union) when streams overlap: the share is of that.
    const bool device = total.kernels + total.memcpy_memset > 0;
    const double base = device ? total.sum_ms() - total.idle_ms : total.busy_ms;
    out.phases_pct_of_busy = base > 0 ? 100.0 * total.phases.in_phases() / base : 0.0;
    if (!total.layer_ms.empty()) {
      std::map<std::string, double> layers;
      for (const auto& [name, v] : total.layer_ms) layers[name] = v / n;
      out.layers_ms = layers;
    }
  }
  out.categories_ms = cat_ms;
  out.categories_pct_of_dt = cat_pct;
  out.sum_ms = sum;
  out.sum_pct_of_dt = pct(sum);
  out.span_ms = total.span_ms / n;
  out.idle_ms = total.idle_ms / n;
  out.other_ms = total.other_ms / n;
  out.overlap_ms = total.overlap_ms / n;
  out.busy_ms = total.busy_ms / n;
  out.other_top = std::move(top);
  out.top_by_category = std::move(by_category);
  return out;
}

}  // namespace ladder::profiler
