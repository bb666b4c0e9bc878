// bench/micro/tee_reporter.h: a google/benchmark reporter that shows the run
// on the terminal (console, json or csv, as --benchmark_format asks) and
// keeps google/benchmark's own JSON in memory, so that the command can write
// <run_dir>/micro.json atomically when the run ends. It also counts the
// benchmarks that ended in an error (a failed check, an exception), apart
// from those skipped because their way is not available on the device. On
// the terminal, google/benchmark's "Library was built as DEBUG" warning is
// replaced by what the library's build is (library_build.h).
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench/micro/harness.h"
#include "bench/micro/library_build.h"

namespace ladder::micro {

class TeeReporter final : public benchmark::BenchmarkReporter {
 public:
  explicit TeeReporter(std::unique_ptr<benchmark::BenchmarkReporter> display) : display_(std::move(display)) {
    json_.SetOutputStream(&json_text_);
    json_.SetErrorStream(&json_text_);
  }

  bool ReportContext(const Context& context) override {
    json_.ReportContext(context);
    std::ostream& terminal = display_->GetErrorStream();  // where the console and CSV reporters print the context
    std::ostringstream printed;
    display_->SetErrorStream(&printed);
    const bool ok = display_->ReportContext(context);
    display_->SetErrorStream(&terminal);
    terminal << without_debug_warning(printed.str()) << std::flush;
    return ok;
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (!r.error_occurred) continue;
      const bool missing = std::string_view(r.error_message).rfind(kNotAvailable, 0) == 0;
      (missing ? unavailable_ : errors_).push_back(r.benchmark_name() + ": " + r.error_message);
    }
    json_.ReportRuns(runs);
    display_->ReportRuns(runs);
  }
  void Finalize() override {
    json_.Finalize();
    display_->Finalize();
  }

  // google/benchmark's JSON of everything reported so far (complete after Finalize).
  std::string json() const { return json_text_.str(); }
  // "name: message" for every run that ended in an error.
  const std::vector<std::string>& errors() const { return errors_; }
  // "name: not available here: why" for every run skipped as not available.
  const std::vector<std::string>& unavailable() const { return unavailable_; }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> display_;
  benchmark::JSONReporter json_;
  std::ostringstream json_text_;
  std::vector<std::string> errors_;
  std::vector<std::string> unavailable_;
};

}  // namespace ladder::micro
