// bench/micro/families.h: the micro-benchmark families, one per mechanism of
// the ladder, each defined in a file of its own: bench/micro/<name>.cpp, or
// <name>_micro.cpp beside its op (variants/ops/<op>/, variants/fused_linear/),
// as `const Family ladder::micro::<name>_family`. CMake globs both and
// generates the list (build/generated/micro_family_list.cpp).
#pragma once

#include <algorithm>
#include <vector>

#include "bench/micro/harness.h"

namespace ladder::micro {

// Every family, in the ladder order of the switch it isolates (Family::rung).
std::vector<const Family*> all_families();

// `families` in that order (stable: families of one switch keep theirs).
inline std::vector<const Family*> in_ladder_order(std::vector<const Family*> families) {
  std::stable_sort(families.begin(), families.end(),
                   [](const Family* a, const Family* b) { return a->rung->order < b->rung->order; });
  return families;
}

}  // namespace ladder::micro
