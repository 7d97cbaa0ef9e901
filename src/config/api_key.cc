#include "config/api_key.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "core/trusted_file.h"
#include "workspace/workspace.h"

namespace tnk {
namespace {

// Visible ASCII only: a key goes into an Authorization header, where CR, LF or a space would let it
// add headers of its own.
Status check_key_text(const std::string& key, const std::string& where, const std::string& fix) {
  if (key.empty()) return failed("the inference API key from " + where + " is empty", fix);
  bool visible = std::all_of(key.begin(), key.end(), [](char c) { return c > ' ' && c < 127; });
  if (!visible) {
    return failed("the inference API key from " + where +
                      " has spaces or control characters, which an HTTP "
                      "header cannot carry",
                  fix);
  }
  return ok_status();
}

Result<std::string> key_from_env(const Config& config, const Env& env) {
  const std::string& name = *config.inference_api_key_env.value;
  const std::string where = "the variable " + name + " (inference.api_key_env in " + config.file.string() + ")";
  auto value = env.get_nonempty(name);
  if (!value) {
    return not_found("inference.api_key_env names " + name + ", which is " + (env.get(name) ? "empty" : "not set") +
                         " in tnk's environment",
                     "export " + name +
                         "=<the server's API key> before running tnk, or remove "
                         "inference.api_key_env from " +
                         config.file.string());
  }
  TNK_RETURN_IF_ERROR(check_key_text(*value, where, "set " + name + " to the key alone"));
  return *value;
}

Result<std::string> key_from_file(const Config& config, const std::filesystem::path& home) {
  const std::filesystem::path path = workspace::expand_user_path(*config.inference_api_key_file.value, home);
  const std::string key_name = "inference.api_key_file in " + config.file.string();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    return sys_error(err, key_name + " names " + path.string(),
                     err == ENOENT ? "write the server's API key into " + path.string() +
                                         " (`chmod 600` it), or fix the path in " + config.file.string()
                                   : "");
  }
  if (S_ISREG(st.st_mode) && (st.st_mode & 0077) != 0) {
    return permission_denied("refusing to read the inference API key from " + path.string() + ": its mode is " +
                                 octal_mode(st.st_mode & 07777) + ", so others can read it (" + key_name + ")",
                             "`chmod 600 " + path.string() + "`, and change the key if others may have read it");
  }
  auto text = read_trusted_file(path, "the inference API key");
  if (!text) return text.error().context(key_name);
  std::string key = *text;
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
  TNK_RETURN_IF_ERROR(
      check_key_text(key, path.string() + " (" + key_name + ")", "write the key alone into " + path.string()));
  return key;
}

}  // namespace

Result<std::string> read_api_key(const Config& config, const Env& env, const std::filesystem::path& home) {
  if (config.inference_api_key_env.value) return key_from_env(config, env);
  if (config.inference_api_key_file.value) return key_from_file(config, home);
  return std::string();
}

std::string api_key_source(const Config& config, const std::filesystem::path& home) {
  if (config.inference_api_key_env.value) return "env " + *config.inference_api_key_env.value;
  if (config.inference_api_key_file.value) {
    return "file " + workspace::expand_user_path(*config.inference_api_key_file.value, home).string();
  }
  return "none";
}

}  // namespace tnk
