// reports/commands/nsys_import.h: `ladder nsys-import EXPORT.sqlite...
// [--report REPORT.json] [--kernels N] [--format text|markdown|json] [--out
// FILE]`: an Nsight Systems capture of ladder (scripts/nsys, one per rank),
// exported with `nsys export --type sqlite`, as the op breakdown's band, phase
// and kernel tables (profiler/nsys/nsys_capture.h), one column per process, beside
// a ladder report's own (CUPTI) tables with --report. Exit 0 printed, 2 bad
// input (a file that is not such an export, names the file and what is
// missing).
#pragma once

#include <string>
#include <vector>

namespace ladder {

int nsys_import_command(const std::vector<std::string>& args);

}  // namespace ladder
