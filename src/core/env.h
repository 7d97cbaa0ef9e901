// A snapshot of environment variables. Modules read the environment only through this,
// so unit tests hand them a made-up one.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tnk {

class Env {
 public:
  Env() = default;
  explicit Env(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {}
  static Env from_process();

  // The value, or nullopt when unset. An empty value is returned as "".
  std::optional<std::string> get(std::string_view name) const;
  // The value when set and non-empty.
  std::optional<std::string> get_nonempty(std::string_view name) const;
  void set(std::string name, std::string value) { vars_[std::move(name)] = std::move(value); }
  void unset(const std::string& name) { vars_.erase(name); }
  const std::map<std::string, std::string>& all() const { return vars_; }

 private:
  std::map<std::string, std::string> vars_;
};

}  // namespace tnk
