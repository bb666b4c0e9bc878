// reports/model/comparison/kernel_family.cpp: see kernel_family.h.
#include "reports/model/comparison/kernel_family.h"

#include <regex>
#include <vector>

namespace ladder {

namespace {

// A C++ name at depth 0 only: template arguments, parameter lists,
// "(anonymous namespace)" and lambdas ({lambda(float)#1}) dropped; a name
// cut inside one of them ends there.
std::string outside_brackets(const std::string& name) {
  std::string out;
  int depth = 0;
  for (const char c : name) {
    if (c == '<' || c == '(' || c == '{') {
      ++depth;
    } else if ((c == '>' || c == ')' || c == '}') && depth > 0) {
      --depth;
    } else if (depth == 0) {
      out += c;
    }
  }
  // "at::native::(anonymous namespace)::f" left "at::native::::f".
  for (size_t at; (at = out.find("::::")) != std::string::npos;) out.erase(at, 2);
  while (!out.empty() && (out.back() == ' ' || out.back() == ':')) out.pop_back();
  // "(anonymous namespace)::f" left "::f".
  const size_t first = out.find_first_not_of(": ");
  return first == std::string::npos ? "" : out.substr(first);
}

// A token of a generated kernel name that says how the work was tiled or
// scheduled, or for which chip, rather than which work it is.
bool is_tuning_token(const std::string& t) {
  static const std::regex kTuning(
      "[0-9]+[a-z]?|[0-9]+x|[0-9]+(x[0-9]+)+|sm[0-9]+[a-z]?|"
      "ampere|hopper|blackwell|volta|turing|maxwell|pascal|ada|"
      "(tilesize|warpgroupsize|warpsize|cga|cluster|stages?|knob|splitk)[0-9]*(x[0-9]+)*|"
      "h|v|bz|coopA|coopB",
      std::regex::optimize);
  return t.empty() || std::regex_match(t, kTuning);
}

std::string generated_family(const std::string& name) {
  static const std::regex kSmUnderscore("sm_([0-9])");  // sm_80 -> sm80, one token
  const std::string joined = std::regex_replace(name, kSmUnderscore, "sm$1");
  std::string out;
  size_t begin = 0;
  while (begin <= joined.size()) {
    size_t end = joined.find('_', begin);
    if (end == std::string::npos) end = joined.size();
    const std::string token = joined.substr(begin, end - begin);
    if (!is_tuning_token(token)) out += (out.empty() ? "" : "_") + token;
    begin = end + 1;
  }
  if (out.empty()) return name;
  // An in-place operator's '_' (detach_) and a private one's (_to_copy) are the name's.
  if (name.front() == '_') out.insert(out.begin(), '_');
  if (name.back() == '_') out += '_';
  return out;
}

// A wrapper whose first template argument is the kernel (CUTLASS's
// cutlass::Kernel2<cutlass_80_tensorop_..._128x128_32x3_tn_align8>) or the
// operator (an autograd node of a custom function,
// torch::autograd::CppNode<ladder::fused::detail::MlpGeluFunction>): that
// argument, up to the next ',' or '>' at its depth, or "" for no wrapper.
std::string wrapped_kernel(const std::string& name, const std::string& outer) {
  static const std::regex kWrapper("(^|::)(Kernel2?|device_kernel|CppNode)$");
  const size_t open = name.find('<');
  if (open == std::string::npos || !std::regex_search(outer, kWrapper)) return "";
  int depth = 0;
  size_t end = open + 1;
  for (; end < name.size(); ++end) {
    const char c = name[end];
    if (c == '<' || c == '(') ++depth;
    else if ((c == '>' || c == ')') && depth > 0) --depth;
    else if ((c == ',' || c == '>') && depth == 0) break;
  }
  return name.substr(open + 1, end - open - 1);
}

}  // namespace

std::string kernel_family(const std::string& name) {
  std::string n = name;
  if (n.size() > 3 && n.compare(n.size() - 3, 3, "...") == 0) {  // cut by an older report, maybe after a '_'
    n.resize(n.size() - 3);
    while (!n.empty() && n.back() == '_') n.pop_back();
  }
  if (n.rfind("void ", 0) == 0) n.erase(0, 5);
  if (n.find("::") != std::string::npos) {
    const std::string out = outside_brackets(n);
    if (const std::string inner = wrapped_kernel(n, out); !inner.empty()) return out + "<" + kernel_family(inner) + ">";
    return out.empty() ? n : out;
  }
  return generated_family(n);
}

}  // namespace ladder
