// profiler/ranges/nvtx.h: scoped NVTX3 ranges for Nsight Systems.
//
// NVTX3 is header-only; without an attached tool (Nsight, or an injection
// library named by NVTX_INJECTION64_PATH) a push/pop is a near-free no-op.
// Builds without NVTX headers compile these to nothing.
#pragma once

namespace ladder::nvtx {

void push(const char* name);
void pop();

class ScopedRange {
 public:
  explicit ScopedRange(const char* name) { push(name); }
  ~ScopedRange() { pop(); }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};

}  // namespace ladder::nvtx
