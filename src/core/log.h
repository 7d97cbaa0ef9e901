// Diagnostics on stderr: `info:`, `note:`, `warning:` lines, honouring -q/-v.
// stdout is never written here (it belongs to src/output/).
#pragma once

#include <iosfwd>
#include <set>
#include <string>

namespace tnk {

enum class Verbosity { kQuiet, kNormal, kVerbose };

class Log {
 public:
  explicit Log(std::ostream& err, Verbosity verbosity = Verbosity::kNormal) : err_(&err), verbosity_(verbosity) {}

  void info(const std::string& message) const;     // progress; hidden by -q
  void verbose(const std::string& message) const;  // only with -v
  void note(const std::string& message) const;     // a fact the user should know; hidden by -q
  // Warnings survive -q. The same text is printed once per process (config is read once,
  // but a warning must never repeat even when a value is looked at twice).
  void warn(const std::string& message);
  Verbosity verbosity() const { return verbosity_; }
  void set_verbosity(Verbosity v) { verbosity_ = v; }
  std::ostream& stream() const { return *err_; }

 private:
  std::ostream* err_;
  Verbosity verbosity_;
  std::set<std::string> warned_;
};

}  // namespace tnk
