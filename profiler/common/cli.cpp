// profiler/common/cli.cpp: see cli.h.
#include "profiler/common/cli.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "profiler/common/config_error.h"

namespace ladder {

int64_t parse_int(const std::string& option, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || end != value.c_str() + value.size() || errno == ERANGE)
    throw ConfigError(fmt::format("{}: '{}' is not an integer; expected e.g. {} 4", option, value,
                                  option));
  return int64_t(v);
}

double parse_double(const std::string& option, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || errno == ERANGE)
    throw ConfigError(fmt::format("{}: '{}' is not a number; expected e.g. {} 0.5", option, value,
                                  option));
  // strtod reads "nan" and "inf"; no option of ladder means either.
  if (!std::isfinite(v))
    throw ConfigError(fmt::format("{}: '{}' is not a finite number; expected e.g. {} 0.5", option, value,
                                  option));
  return v;
}

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = std::min(s.find(',', start), s.size());
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

ArgParser::ArgParser(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

void ArgParser::add_value(std::string name, std::string metavar, std::string help,
                          std::function<void(const std::string&)> apply) {
  options_.push_back({std::move(name), std::move(metavar), std::move(help), true, std::move(apply)});
}

void ArgParser::add_flag(std::string name, std::string help, std::function<void()> apply) {
  options_.push_back({std::move(name), "", std::move(help), false,
                      [apply = std::move(apply)](const std::string&) { apply(); }});
}

const ArgParser::Option* ArgParser::find(const std::string& name) const {
  for (const auto& o : options_)
    if (o.name == name) return &o;
  return nullptr;
}

bool ArgParser::parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--help" || arg == "-h") {
      fmt::print("{}", usage());
      return false;
    }
    if (arg.rfind("--", 0) != 0 && positionals_) {
      positionals_->push_back(arg);
      continue;
    }
    if (arg.rfind("--", 0) != 0)
      throw ConfigError(fmt::format("{}: unexpected argument '{}'; options start with --, see "
                                    "'ladder {} --help'",
                                    command_, arg, command_));
    std::string value;
    bool inline_value = false;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inline_value = true;
    }
    const Option* opt = find(arg);
    if (!opt)
      throw ConfigError(fmt::format("{}: unknown option '{}'; see 'ladder {} --help'", command_,
                                    arg, command_));
    if (opt->takes_value && !inline_value) {
      if (i + 1 >= args.size())
        throw ConfigError(fmt::format("{}: missing value; expected {} {}", arg, arg, opt->metavar));
      value = args[++i];
    } else if (!opt->takes_value && inline_value) {
      throw ConfigError(fmt::format("{}: takes no value, got '{}'", arg, value));
    }
    opt->apply(value);
    given_.push_back(opt->name);
  }
  return true;
}

bool ArgParser::any_given_except(std::initializer_list<const char*> ignored) const {
  for (const auto& name : given_)
    if (std::none_of(ignored.begin(), ignored.end(), [&](const char* i) { return name == i; })) return true;
  return false;
}

std::string ArgParser::usage() const {
  std::string out = fmt::format("usage: ladder {} [options]\n\n{}\n\noptions:\n", command_, summary_);
  for (const auto& o : options_) {
    const std::string lhs = o.takes_value ? fmt::format("{} {}", o.name, o.metavar) : o.name;
    out += fmt::format("  {:<24} {}\n", lhs, o.help);
  }
  out += fmt::format("  {:<24} {}\n", "-h, --help", "show this help");
  return out;
}

namespace {

// "text (default), markdown (md) or json": the names, markdown's short form
// beside it, the first marked the default when `with_default`.
std::string listed_formats(const std::vector<std::string>& formats, bool with_default) {
  std::string s;
  for (size_t i = 0; i < formats.size(); ++i) {
    if (i > 0) s += i + 1 == formats.size() ? " or " : ", ";
    s += formats[i];
    if (i == 0 && with_default) s += " (default)";
    if (formats[i] == "markdown") s += " (md)";
  }
  return s;
}

}  // namespace

TableOutputOptions::TableOutputOptions(ArgParser& ap, std::vector<std::string> formats,
                                       const std::string& format_note)
    : format(formats.empty() ? "" : formats.front()), formats_(std::move(formats)) {
  const std::string listed = listed_formats(formats_, true);
  ap.add_value("--format", "NAME", format_note.empty() ? listed : listed + " " + format_note,
               [this](const std::string& v) { format = v; });
  ap.add_value("--out", "FILE", "write here instead of stdout", [this](const std::string& v) { out = v; });
}

bool TableOutputOptions::is(const std::string& name) const {
  return format == name || (name == "markdown" && format == "md");
}

void TableOutputOptions::check(const std::string& command) const {
  for (const auto& f : formats_)
    if (is(f)) return;
  throw ConfigError(
      fmt::format("{}: --format '{}'; expected {}", command, format, listed_formats(formats_, false)));
}

const std::string& one_input(const std::string& command, const std::vector<std::string>& inputs,
                             const std::string& what) {
  if (inputs.size() != 1)
    throw ConfigError(fmt::format("{}: got {} inputs, expected exactly one {}", command, inputs.size(), what));
  return inputs.front();
}

}  // namespace ladder
