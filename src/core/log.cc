#include "core/log.h"

#include <ostream>

#include "core/terminal_text.h"

namespace tnk {

// Messages may quote a sandbox (its error words, its output): printed through terminal_safe (L7).

void Log::info(const std::string& message) const {
  if (verbosity_ != Verbosity::kQuiet) *err_ << "info: " << terminal_safe(message) << '\n';
}

void Log::verbose(const std::string& message) const {
  if (verbosity_ == Verbosity::kVerbose) *err_ << "debug: " << terminal_safe(message) << '\n';
}

void Log::note(const std::string& message) const {
  if (verbosity_ != Verbosity::kQuiet) *err_ << "note: " << terminal_safe(message) << '\n';
}

void Log::warn(const std::string& message) {
  if (!warned_.insert(message).second) return;
  *err_ << "warning: " << terminal_safe(message) << '\n';
}

}  // namespace tnk
