#include "core/env.h"

#include <unistd.h>

namespace tnk {

Env Env::from_process() {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    vars.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return Env(std::move(vars));
}

std::optional<std::string> Env::get(std::string_view name) const {
  auto it = vars_.find(std::string(name));
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> Env::get_nonempty(std::string_view name) const {
  auto value = get(name);
  if (!value || value->empty()) return std::nullopt;
  return value;
}

}  // namespace tnk
