#include "core/log.h"

#include <ostream>

namespace tnk {

void Log::info(const std::string& message) const {
  if (verbosity_ != Verbosity::kQuiet) *err_ << "info: " << message << '\n';
}

void Log::verbose(const std::string& message) const {
  if (verbosity_ == Verbosity::kVerbose) *err_ << "debug: " << message << '\n';
}

void Log::note(const std::string& message) const {
  if (verbosity_ != Verbosity::kQuiet) *err_ << "note: " << message << '\n';
}

void Log::warn(const std::string& message) {
  if (!warned_.insert(message).second) return;
  *err_ << "warning: " << message << '\n';
}

}  // namespace tnk
