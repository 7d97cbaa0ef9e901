#include "config/route_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "config/config_values.h"
#include "core/subprocess.h"
#include "core/unique_fd.h"
#include "workspace/workspace.h"

namespace tnk {
namespace {

std::string trimmed(std::string text) {
  const char* space = " \t\r\n";
  text.erase(0, std::min(text.find_first_not_of(space), text.size()));
  text.erase(text.find_last_not_of(space) + 1);
  return text;
}

class SourceReader {
 public:
  SourceReader(const Config& config, const RouteSetting& route) : config_(config), route_(route) {}

  // "<tnk.toml>:<line>: route 'NAME': source SOURCE: <what>", with `hint`.
  Error error(const std::string& what, std::string hint) const {
    return failed(config_.file.string() + ":" + std::to_string(route_.line) + ": route '" + route_.name + "': source " +
                      config::printable(route_.source) + ": " + what,
                  std::move(hint));
  }

  Result<std::string> from_env(const Env& env) const {
    std::string name = route_.source.substr(4);
    auto value = env.get_nonempty(name);
    if (!value) {
      return error("the variable " + name + " is not set (or empty)",
                   "set it in the environment of the tnk command that starts the sandbox, or change the route's "
                   "source in " +
                       config_.file.string());
    }
    return *value;
  }

  Result<std::string> from_file(const std::filesystem::path& home) const {
    std::filesystem::path path = workspace::expand_user_path(route_.source.substr(5), home);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!fd.valid()) {
      int err = errno;
      return error("cannot open " + path.string() + ": " + std::strerror(err),
                   "write the credential into that file (chmod 600), or change the route's source");
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return error(path.string() + " is not a regular file", "");
    if ((st.st_mode & 077) != 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return error(path.string() + " can be read or changed by others (mode " + mode + ")",
                   "chmod 600 " + path.string());
    }
    if (st.st_size > static_cast<off_t>(kMaxCredentialBytes)) return error(path.string() + " is too large", "");
    std::string text(static_cast<size_t>(st.st_size), '\0');
    ssize_t n = ::read(fd.get(), text.data(), text.size());
    if (n < 0) return error("cannot read " + path.string() + ": " + std::strerror(errno), "");
    text.resize(static_cast<size_t>(n));
    return text;
  }

  Result<std::string> from_command() const {
    std::istringstream words(route_.source.substr(4));
    std::vector<std::string> argv;
    for (std::string word; words >> word;) argv.push_back(word);
    ProcessOptions options;
    options.capture_stdout = true;
    options.capture_stderr = true;
    options.timeout = kRouteCommandTimeout;
    auto ran = run_process(argv, options);
    if (!ran) return error(ran.error().message, "check that the command runs in your shell, as the same user");
    if (ran->exit_code != 0) {
      std::string said = trimmed(ran->err.substr(0, 200));
      said = config::printable(said.substr(0, said.find('\n')));
      return error(
          "the command exited with status " + std::to_string(ran->exit_code) + (said.empty() ? "" : ": " + said),
          "run it yourself to see why (for gh: `gh auth login`)");
    }
    return ran->out;
  }

 private:
  const Config& config_;
  const RouteSetting& route_;
};

}  // namespace

Result<std::string> resolve_route_credential(const Config& config, const RouteSetting& route, const Env& env,
                                             const std::filesystem::path& home) {
  SourceReader reader(config, route);
  Result<std::string> raw = route.source.starts_with("env:")    ? reader.from_env(env)
                            : route.source.starts_with("file:") ? reader.from_file(home)
                                                                : reader.from_command();
  if (!raw) return raw;
  std::string credential = trimmed(std::move(*raw));
  if (credential.empty()) return reader.error("it gave an empty credential", "");
  if (credential.size() > kMaxCredentialBytes) return reader.error("the credential is too large", "");
  for (char c : credential) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return reader.error("the credential holds control characters (a header cannot carry them)",
                          "the source must give the credential alone, on one line");
    }
  }
  return credential;
}

Result<std::vector<net::CredentialRoute>> resolve_routes(const Config& config, const Env& env,
                                                         const std::filesystem::path& home) {
  std::vector<net::CredentialRoute> routes;
  for (const RouteSetting& setting : config.routes) {
    TNK_ASSIGN_OR_RETURN(std::string credential, resolve_route_credential(config, setting, env, home));
    net::CredentialRoute route;
    route.name = setting.name;
    route.host = setting.host;
    route.port = setting.port;
    route.ca_file = setting.ca_file.string();
    route.methods = setting.methods;
    route.paths = setting.paths;
    route.header_name = setting.header.name;
    route.header_value = net::render_header_value(setting.header, credential);
    route.secrets = net::credential_secrets(setting.header, credential);
    routes.push_back(std::move(route));
  }
  return routes;
}

}  // namespace tnk
