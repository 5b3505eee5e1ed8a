// A small command-line parser: named options (--name VALUE, --name=VALUE, flags), repeatable
// options and positional arguments, with generated --help text.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace minfer::cli {

// A mistake in the command line itself: printed with a hint, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  bool help_requested() const { return help_; }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  // The (last) value of an option, or `def` when it was not given.
  std::string get(const std::string& name, const std::string& def = "") const;
  std::vector<std::string> get_all(const std::string& name) const;
  // Integer / number values; UsageError naming the option when malformed or out of range.
  long long get_int(const std::string& name, long long def, long long min = 0,
                    long long max = (1ll << 40)) const;
  double get_double(const std::string& name, double def, double min = 0) const;
  size_t positional_count() const { return positional_.size(); }
  const std::string& positional(size_t i) const { return positional_.at(i); }
  const std::string& command() const { return command_; }

 private:
  friend class ArgParser;
  bool help_ = false;
  std::string command_;
  std::map<std::string, std::vector<std::string>> values_;  // flags hold one empty string
  std::vector<std::string> positional_;
};

class ArgParser {
 public:
  // `command` is e.g. "run"; `synopsis` the part of the usage line after "minfer run".
  ArgParser(std::string command, std::string synopsis, std::string description);

  ArgParser& positional(const std::string& name, const std::string& help, bool required = true);
  ArgParser& flag(const std::string& name, const std::string& help);
  // An option taking a value; `metavar` names it in --help ("N", "F").
  ArgParser& option(const std::string& name, const std::string& metavar, const std::string& help);
  // An option that may be given several times.
  ArgParser& repeated(const std::string& name, const std::string& metavar, const std::string& help);
  // A line of free text at the end of --help (examples, notes).
  ArgParser& epilog(const std::string& text);

  // Parses the arguments after the command name. Throws UsageError on unknown options,
  // missing values, a repeated single option, or wrong positional counts (unless --help).
  Args parse(const std::vector<std::string>& argv) const;
  std::string help() const;
  const std::string& command() const { return command_; }

 private:
  struct Spec {
    std::string name, metavar, help;
    bool takes_value = false, repeatable = false;
  };
  struct Positional {
    std::string name, help;
    bool required = true;
  };
  const Spec* find(const std::string& name) const;

  std::string command_, synopsis_, description_, epilog_;
  std::vector<Spec> specs_;
  std::vector<Positional> positionals_;
};

}  // namespace minfer::cli
