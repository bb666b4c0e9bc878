// tests/profiler/nvtx_recorder.cpp: an NVTX injection library that records ranges.
//
// NVTX3 loads the library named by NVTX_INJECTION64_PATH at the first NVTX
// call and calls its InitializeInjectionNvtx2, which here installs handlers
// for the core range calls. Every push and pop is appended, flushed, to the
// file named by LADDER_NVTX_RECORD, one line each, with CLOCK_MONOTONIC ns:
//   push <thread id> <ns> <name>
//   pop <thread id> <ns>
// tests/profiler/test_nvtx.cpp rebuilds each thread's nested range tree from it (on
// CUDA the autograd engine runs backward on a thread of its own).
#include <sys/syscall.h>
#include <unistd.h>

#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

namespace {

std::mutex g_mutex;
FILE* g_out = nullptr;

long thread_id() { return long(syscall(SYS_gettid)); }

long long now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void record(const char* what, const char* name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_out) return;
  if (name)
    std::fprintf(g_out, "%s %ld %lld %s\n", what, thread_id(), now_ns(), name);
  else
    std::fprintf(g_out, "%s %ld %lld\n", what, thread_id(), now_ns());
  std::fflush(g_out);
}

int NVTX_API push_a(const char* message) {
  record("push", message ? message : "");
  return 0;
}

int NVTX_API push_ex(const nvtxEventAttributes_t* attr) {
  const bool ascii = attr && attr->messageType == NVTX_MESSAGE_TYPE_ASCII;
  record("push", ascii ? attr->message.ascii : "<non-ascii message>");
  return 0;
}

int NVTX_API pop() {
  record("pop", nullptr);
  return 0;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (!callbacks) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || !table) return 0;
  if (size <= NVTX_CBID_CORE_RangePop) return 0;
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(push_a);
  *table[NVTX_CBID_CORE_RangePushEx] = reinterpret_cast<NvtxFunctionPointer>(push_ex);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(pop);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_out) {
    if (const char* path = std::getenv("LADDER_NVTX_RECORD")) g_out = std::fopen(path, "a");
    if (g_out) {
      std::fprintf(g_out, "pid %ld\n", long(getpid()));
      std::fflush(g_out);
    }
  }
  return g_out ? 1 : 0;
}
