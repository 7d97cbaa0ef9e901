#include "sandbox/registries.h"

#include <algorithm>

#include "core/subprocess.h"
#include "image/apt_sources.h"
#include "inference/url.h"

namespace tnk::sandbox {
namespace {

Result<std::vector<std::string>> debian_hosts() {
  TNK_ASSIGN_OR_RETURN(auto sources, image::read_apt_sources());
  return image::apt_source_hosts(image::debian_sources(sources));
}

// The registry the host's npm uses: `npm config get registry`, as the user's and the host's npm
// config say it (~/.npmrc, the global npmrc, npm_config_* in the caller's environment). Run in "/",
// never in the calling directory: npm reads the .npmrc of the project it finds from there, which the
// sandbox writes, and would add that host to the provisioning allow-list (security review M2); and a
// relative PATH entry would find a program the sandbox left there.
Result<std::vector<std::string>> npm_hosts() {
  ProcessOptions options;
  options.capture_stdout = true;
  options.capture_stderr = true;
  options.cwd = "/";
  options.timeout = std::chrono::seconds(20);
  auto ran = run_process({"npm", "config", "get", "registry"}, options);
  if (!ran || ran->exit_code != 0) {
    return not_found("cannot resolve @npm: `npm config get registry` failed on the host",
                     "install npm on the host, or list the registry's domain instead of @npm");
  }
  std::string text = ran->out;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  auto url = inference::parse_url(text);
  if (!url) return failed("cannot resolve @npm: npm's registry '" + text + "' is not an http(s) URL");
  return std::vector<std::string>{url->host};
}

void sort_unique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

Result<std::vector<std::string>> expand_registries(const std::vector<std::string>& entries) {
  std::vector<std::string> allow;
  for (const auto& entry : entries) {
    if (entry == "@debian" || entry == "@npm") {
      TNK_ASSIGN_OR_RETURN(auto hosts, entry == "@debian" ? debian_hosts() : npm_hosts());
      allow.insert(allow.end(), hosts.begin(), hosts.end());
    } else {
      allow.push_back(entry);
    }
  }
  sort_unique(allow);
  return allow;
}

Result<std::vector<std::string>> provision_allow_list(const std::vector<std::string>& provision_allow) {
  std::vector<std::string> entries = provision_allow;
  entries.push_back("@debian");
  TNK_ASSIGN_OR_RETURN(auto allow, expand_registries(entries));
  // npm's registry is in the default list when the host's npm names one; a profile that lists @npm
  // itself has had the error above when it does not.
  bool listed_npm = std::find(entries.begin(), entries.end(), "@npm") != entries.end();
  if (auto npm = listed_npm ? not_found("") : npm_hosts(); npm.ok()) {
    allow.insert(allow.end(), npm->begin(), npm->end());
    sort_unique(allow);
  }
  return allow;
}

}  // namespace tnk::sandbox
