// profiler/ranges/nvtx.cpp: see nvtx.h.
#include "profiler/ranges/nvtx.h"

#ifdef LADDER_WITH_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace ladder::nvtx {

#ifdef LADDER_WITH_NVTX
void push(const char* name) { nvtxRangePushA(name); }
void pop() { nvtxRangePop(); }
#else
void push(const char*) {}
void pop() {}
#endif

}  // namespace ladder::nvtx
