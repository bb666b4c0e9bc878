// bench/micro/library_build.h: what the linked google/benchmark was built as,
// said once and plainly in place of its "built as DEBUG" warning.
//
// google/benchmark calls itself DEBUG whenever it was compiled without NDEBUG:
// "***WARNING*** Library was built as DEBUG. Timings may be affected." in its
// console context, "library_build_type": "debug" in its JSON. Debian's
// libbenchmark (the one scripts/bootstrap installs and the offline bundle
// packs) is built with CMake's configuration None and Debian's own flags
// (-g -O2 and hardening, no -DNDEBUG): optimised, with its assert()s on.
// Checked on libbenchmark.so.1.7.1 (2026-11-29): its CMake package imports it
// as configuration None, it calls __assert_fail and the _FORTIFY_SOURCE
// __*_chk functions (which need -O1 or more), and 1 of its 124 exported
// functions sets up a frame pointer (every one would at -O0). Its assertions cannot
// touch ladder's figures either way: every benchmark is timed by ladder's own
// timer around the measured call (UseManualTime, harness.h), and none of
// google/benchmark's code runs inside that.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ladder::micro {

struct LibraryBuild {
  std::string library;        // the file linked, as its CMake package names it
  std::string configuration;  // the CMake configuration it was imported as: "None", "Release", "Debug", ...
  bool ndebug = true;         // whether NDEBUG was defined when it was compiled (its own report says)
  // The one line that replaces its DEBUG warning on the terminal; "" when it gives none.
  std::string note() const;
  // For the JSON context (ladder.gbench_library.*): the above, and the note.
  nlohmann::json context() const;
};

// The linked library's build: configuration and path from configure time
// (bench/micro/CMakeLists.txt), NDEBUG from what the library prints of itself.
const LibraryBuild& library_build();

// `context_text`, what a reporter printed for its context, with
// google/benchmark's DEBUG warning line replaced by library_build().note().
std::string without_debug_warning(const std::string& context_text);

}  // namespace ladder::micro
