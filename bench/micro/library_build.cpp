// bench/micro/library_build.cpp: see library_build.h.
#include "bench/micro/library_build.h"

#include <sstream>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "gbench_build.h"  // generated: kGbenchLibrary, kGbenchConfiguration

namespace ladder::micro {

namespace {

// google/benchmark's own words, printed in its context when it was compiled without NDEBUG.
constexpr const char* kDebugWarning = "***WARNING*** Library was built as DEBUG.";

// What the configuration means for the code, in words.
std::string configuration_meaning(const std::string& configuration) {
  if (configuration == "None")
    return "the packager's own compiler flags, not CMake's Debug; Debian's are -g -O2 without -DNDEBUG, an "
           "optimised build with its assert()s on";
  if (configuration == "Debug") return "unoptimised; a release build would make the whole run faster";
  return "its flags without -DNDEBUG";
}

}  // namespace

std::string LibraryBuild::note() const {
  if (ndebug) return "";
  return fmt::format("ladder bench: google/benchmark calls itself DEBUG because {} was compiled without NDEBUG "
                     "(CMake configuration {}: {}). No time below is affected: each is ladder's own timer around "
                     "the measured call (UseManualTime), and none of google/benchmark's code runs inside it.",
                     library, configuration, configuration_meaning(configuration));
}

nlohmann::json LibraryBuild::context() const {
  return {{"path", library}, {"cmake_configuration", configuration}, {"ndebug", ndebug},
          {"note", ndebug ? "compiled with NDEBUG (library_build_type: release)"
                          : "library_build_type 'debug' means compiled without NDEBUG: " +
                                configuration_meaning(configuration) +
                                "; the times are ladder's own timer around the measured call (UseManualTime), "
                                "which none of google/benchmark's code runs inside"}};
}

const LibraryBuild& library_build() {
  static const LibraryBuild build = [] {
    LibraryBuild b;
    b.library = kGbenchLibrary;
    b.configuration = kGbenchConfiguration;
    // The library's own verdict, from the context it prints (the same
    // preprocessor test that sets library_build_type in its JSON).
    std::ostringstream printed;
    benchmark::BenchmarkReporter::PrintBasicContext(&printed, benchmark::BenchmarkReporter::Context());
    b.ndebug = printed.str().find(kDebugWarning) == std::string::npos;
    return b;
  }();
  return build;
}

std::string without_debug_warning(const std::string& context_text) {
  std::istringstream in(context_text);
  std::string out;
  for (std::string line; std::getline(in, line);)
    out += (line.rfind(kDebugWarning, 0) == 0 ? library_build().note() : line) + "\n";
  return out;
}

}  // namespace ladder::micro
