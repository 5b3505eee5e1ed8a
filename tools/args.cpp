#include "tools/args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace minfer::cli {

std::string Args::get(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() || it->second.empty() ? def : it->second.back();
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

long long Args::get_int(const std::string& name, long long def, long long min,
                        long long max) const {
  if (!has(name)) return def;
  const std::string s = get(name);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError(name + " expects an integer, got '" + s + "'");
  if (v < min || v > max)
    throw UsageError(name + " must be in [" + std::to_string(min) + ", " + std::to_string(max) +
                     "], got " + s);
  return v;
}

double Args::get_double(const std::string& name, double def, double min) const {
  if (!has(name)) return def;
  const std::string s = get(name);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v))
    throw UsageError(name + " expects a number, got '" + s + "'");
  if (v < min) throw UsageError(name + " must be at least " + std::to_string(min) + ", got " + s);
  return v;
}

ArgParser::ArgParser(std::string command, std::string synopsis, std::string description)
    : command_(std::move(command)),
      synopsis_(std::move(synopsis)),
      description_(std::move(description)) {}

ArgParser& ArgParser::positional(const std::string& name, const std::string& help, bool required) {
  positionals_.push_back({name, help, required});
  return *this;
}

ArgParser& ArgParser::flag(const std::string& name, const std::string& help) {
  specs_.push_back({name, "", help, false, false});
  return *this;
}

ArgParser& ArgParser::option(const std::string& name, const std::string& metavar,
                             const std::string& help) {
  specs_.push_back({name, metavar, help, true, false});
  return *this;
}

ArgParser& ArgParser::repeated(const std::string& name, const std::string& metavar,
                               const std::string& help) {
  specs_.push_back({name, metavar, help, true, true});
  return *this;
}

ArgParser& ArgParser::epilog(const std::string& text) {
  epilog_ += text + "\n";
  return *this;
}

const ArgParser::Spec* ArgParser::find(const std::string& name) const {
  for (const Spec& s : specs_)
    if (s.name == name) return &s;
  return nullptr;
}

Args ArgParser::parse(const std::vector<std::string>& argv) const {
  Args args;
  args.command_ = command_;
  bool only_positional = false;  // after "--"
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (only_positional || a.size() < 2 || a[0] != '-' || (a[1] != '-' && a != "-h")) {
      args.positional_.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positional = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      args.help_ = true;
      continue;
    }
    std::string name = a, value;
    bool inline_value = false;
    if (auto eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    const Spec* spec = find(name);
    if (!spec) throw UsageError("unknown option '" + name + "'");
    if (!spec->takes_value) {
      if (inline_value) throw UsageError(name + " takes no value");
      args.values_[name] = {""};
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argv.size()) throw UsageError(name + " needs a value (" + spec->metavar + ")");
      value = argv[++i];
    }
    auto& slot = args.values_[name];
    if (!spec->repeatable && !slot.empty()) throw UsageError(name + " was given twice");
    slot.push_back(value);
  }
  if (args.help_) return args;
  size_t required = 0;
  for (const Positional& p : positionals_) required += p.required ? 1 : 0;
  if (args.positional_.size() < required)
    throw UsageError("missing " + positionals_[args.positional_.size()].name);
  if (args.positional_.size() > positionals_.size())
    throw UsageError("unexpected argument '" + args.positional_[positionals_.size()] + "'");
  return args;
}

std::string ArgParser::help() const {
  std::string out = "usage: minfer " + command_ + (synopsis_.empty() ? "" : " " + synopsis_) +
                    "\n\n" + description_ + "\n";
  auto line = [&](const std::string& left, const std::string& text) {
    std::string l = "  " + left;
    if (l.size() < 26) {
      l.resize(26, ' ');
    } else {
      l += "\n" + std::string(26, ' ');
    }
    // Continuation lines of a multi-line help text align under the first.
    std::string t;
    for (char c : text)
      t += c == '\n' ? std::string("\n") + std::string(26, ' ') : std::string(1, c);
    out += l + t + "\n";
  };
  if (!positionals_.empty()) {
    out += "\narguments:\n";
    for (const Positional& p : positionals_) line(p.name, p.help);
  }
  out += "\noptions:\n";
  for (const Spec& s : specs_)
    line(s.name + (s.metavar.empty() ? "" : " " + s.metavar),
         s.help + (s.repeatable ? " (repeatable)" : ""));
  line("-h, --help", "show this help");
  if (!epilog_.empty()) out += "\n" + epilog_;
  return out;
}

}  // namespace minfer::cli
