// profiler/ranges/range.cpp: range names and the unscoped range stack (see range.h).
#include "profiler/ranges/range.h"

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include <fmt/format.h>

namespace ladder::profiler {

namespace names {

std::string step(const std::string& rung) { return "step " + rung; }

const char* layer(int64_t index) {
  // Interned: NVTX and RecordFunction may keep the pointer while the range is open.
  static std::mutex mutex;
  static std::deque<std::string> interned;  // a deque never moves its elements
  std::lock_guard<std::mutex> lock(mutex);
  while (int64_t(interned.size()) <= index) interned.push_back(fmt::format("layer {}", interned.size()));
  return interned[size_t(index)].c_str();
}

std::string allreduce_bucket(int64_t index) { return fmt::format("all-reduce bucket {}", index); }

std::string profiler_step(int64_t step) { return fmt::format("ProfilerStep#{}", step); }

}  // namespace names

#ifdef LADDER_WITH_PROFILER

bool compiled_in() { return true; }

namespace {
struct OpenRange {
  std::unique_ptr<at::RecordFunction> record;
};
thread_local std::vector<OpenRange> t_open;
}  // namespace

void begin_range(const char* name) {
  nvtx::push(name);
  auto record = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (record->isActive()) record->before(name);
  t_open.push_back({std::move(record)});
}

void end_range() {
  if (t_open.empty()) return;
  nvtx::pop();
  t_open.pop_back();  // ends the RecordFunction
}

int64_t open_ranges() { return int64_t(t_open.size()); }

#else

bool compiled_in() { return false; }
void begin_range(const char*) {}
void end_range() {}
int64_t open_ranges() { return 0; }

#endif

}  // namespace ladder::profiler
