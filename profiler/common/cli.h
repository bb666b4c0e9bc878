// profiler/common/cli.h: a small, strict command-line parser for ladder's subcommands.
//
// Options are "--name VALUE", "--name=VALUE" or "--flag". Unknown options,
// missing values and malformed numbers throw ConfigError naming the option,
// the value and what was expected; main turns that into exit code 2.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace ladder {

int64_t parse_int(const std::string& option, const std::string& value);
double parse_double(const std::string& option, const std::string& value);
// "a,b,,c" -> {"a", "b", "c"}
std::vector<std::string> split_csv(const std::string& s);

class ArgParser {
 public:
  ArgParser(std::string command, std::string summary);

  void add_value(std::string name, std::string metavar, std::string help,
                 std::function<void(const std::string&)> apply);
  void add_flag(std::string name, std::string help, std::function<void()> apply);
  // Collects non-option arguments into `out` instead of rejecting them.
  void allow_positionals(std::vector<std::string>* out) { positionals_ = out; }

  // Applies options in order. Returns false when --help was given (the usage
  // has then been printed to stdout).
  bool parse(const std::vector<std::string>& args);
  // Whether any option other than `ignored` was given to parse().
  bool any_given_except(std::initializer_list<const char*> ignored) const;
  std::string usage() const;

 private:
  struct Option {
    std::string name, metavar, help;
    bool takes_value;
    std::function<void(const std::string&)> apply;
  };
  const Option* find(const std::string& name) const;

  std::string command_, summary_;
  std::vector<Option> options_;
  std::vector<std::string>* positionals_ = nullptr;
  std::vector<std::string> given_;
};

// --format NAME and --out FILE as the table commands take them (ladder
// bands, sol, nsys-import): `formats` are the names accepted, the first the
// default; "markdown" is also accepted as "md". Declares both options on `ap`
// (keep this object alive until ap.parse returns; it is not copyable); the
// format's help lists the names, then `format_note`.
class TableOutputOptions {
 public:
  TableOutputOptions(ArgParser& ap, std::vector<std::string> formats, const std::string& format_note = "");
  TableOutputOptions(const TableOutputOptions&) = delete;
  TableOutputOptions& operator=(const TableOutputOptions&) = delete;
  // After parsing: throws ConfigError ("COMMAND: --format 'X'; expected ...")
  // for a name not accepted.
  void check(const std::string& command) const;
  // Whether the format asked for is `name` ("md" is "markdown").
  bool is(const std::string& name) const;

  std::string format;  // as given: the default, or what --format said
  std::string out;     // --out; empty: stdout

 private:
  std::vector<std::string> formats_;
};

// The one positional input of a command that takes exactly one; else
// ConfigError "COMMAND: got N inputs, expected exactly one WHAT".
const std::string& one_input(const std::string& command, const std::vector<std::string>& inputs,
                             const std::string& what);

}  // namespace ladder
