#include "core/paths.h"

namespace tnk {
namespace {

std::filesystem::path xdg_dir(const Env& env, const char* var, const std::filesystem::path& fallback) {
  auto value = env.get_nonempty(var);
  if (value && std::filesystem::path(*value).is_absolute()) return std::filesystem::path(*value) / "tnk";
  return fallback / "tnk";
}

}  // namespace

Result<Paths> Paths::resolve(const Env& env) {
  auto home = env.get_nonempty("HOME");
  if (!home || !std::filesystem::path(*home).is_absolute()) {
    return failed("HOME is not set to an absolute path", "set HOME to your home directory");
  }
  Paths paths;
  paths.home = std::filesystem::path(*home).lexically_normal();
  if (paths.home.has_relative_path() && paths.home.filename().empty()) paths.home = paths.home.parent_path();
  paths.config_dir = xdg_dir(env, "XDG_CONFIG_HOME", paths.home / ".config");
  paths.state_dir = xdg_dir(env, "XDG_STATE_HOME", paths.home / ".local" / "state");
  paths.cache_dir = xdg_dir(env, "XDG_CACHE_HOME", paths.home / ".cache");
  return paths;
}

}  // namespace tnk
