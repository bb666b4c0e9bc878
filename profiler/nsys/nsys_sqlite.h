// profiler/nsys/nsys_sqlite.h: reads an `nsys export --type sqlite` file into
// captures (profiler/nsys/nsys_capture.h), one per profiled process.
//
// The tables read, as NVIDIA's "SQLite Export Schema Reference" documents
// them (Nsight Systems' nsys-exporter documentation):
//   StringIds(id, value)                                   names by id
//   CUPTI_ACTIVITY_KIND_KERNEL(start, end, correlationId, globalPid,
//                              demangledName -> StringIds)
//   CUPTI_ACTIVITY_KIND_MEMCPY / _MEMSET(start, end, correlationId, globalPid)
//   CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId)
//                                                          the launching calls
//   NVTX_EVENTS(start, end, eventType, text, textId -> StringIds, globalTid)
//       eventType 59: a push/pop range, 60: a start/end range; the name is
//       text, or textId's string for a registered one.
// globalTid packs the process and thread ids: pid = (globalTid >> 24) &
// 0xFFFFFF, tid = globalTid & 0xFFFFFF (the documentation's "serialized
// process and thread identifiers"); globalPid holds the pid the same way. A
// device activity and its runtime record share correlationId within a process.
// Times are ns on one clock, so they compare across tables.
#pragma once

#include <string>
#include <vector>

#include "profiler/nsys/nsys_capture.h"

namespace ladder::profiler {

// ConfigError (exit 2) naming the file and what is missing: not an SQLite
// file, or no kernel, runtime or NVTX table (a capture without
// --trace=cuda,nvtx); or, in a build without SQLite3, saying so.
std::vector<Capture> read_nsys_sqlite(const std::string& path);

}  // namespace ladder::profiler
