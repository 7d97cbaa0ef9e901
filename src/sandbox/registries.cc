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

// The registry the host's npm uses: `npm config get registry`.
Result<std::vector<std::string>> npm_hosts() {
  ProcessOptions options;
  options.capture_stdout = true;
  options.capture_stderr = true;
  options.timeout = std::chrono::seconds(20);
  auto ran = run_process({"npm", "config", "get", "registry"}, options);
  if (!ran || ran->exit_code != 0) {
    return not_found("cannot resolve @npm in provision.allow: `npm config get registry` failed on the host",
                     "install npm on the host, or list the registry's domain in provision.allow instead of @npm");
  }
  std::string text = ran->out;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  auto url = inference::parse_url(text);
  if (!url) return failed("cannot resolve @npm: npm's registry '" + text + "' is not an http(s) URL");
  return std::vector<std::string>{url->host};
}

}  // namespace

Result<std::vector<std::string>> provision_allow_list(const std::vector<std::string>& provision_allow) {
  TNK_ASSIGN_OR_RETURN(std::vector<std::string> allow, debian_hosts());
  for (const auto& entry : provision_allow) {
    if (entry == "@debian") continue;
    if (entry == "@npm") {
      TNK_ASSIGN_OR_RETURN(auto hosts, npm_hosts());
      allow.insert(allow.end(), hosts.begin(), hosts.end());
    } else {
      allow.push_back(entry);
    }
  }
  std::sort(allow.begin(), allow.end());
  allow.erase(std::unique(allow.begin(), allow.end()), allow.end());
  return allow;
}

}  // namespace tnk::sandbox
