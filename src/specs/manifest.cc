// Manifest parsing (yaml-cpp) and loading. yaml-cpp's exceptions stop here.
#include "specs/manifest.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>

#include "config/size.h"
#include "core/strings.h"
#include "core/trusted_file.h"
#include "net/credential_route.h"
#include "specs/profiles.h"

namespace tnk::specs {
namespace fs = std::filesystem;
namespace {

constexpr unsigned kMaxCpus = 1024;

// Walks one document, filling `m`. Every error names <source>:<line>:<column> and the key.
class Parser {
 public:
  Parser(const fs::path& source, Manifest& m) : source_(source), m_(m) {}

  Status document(const YAML::Node& root) {
    if (root.IsNull()) return ok_status();
    if (!root.IsMap()) return error(root, "", "a manifest must be a mapping of keys", "for example `profile: pi`");
    return each(root, "", [&](const std::string& key, const YAML::Node& value) -> Status {
      if (key == "profile") return scalar(value, key, "for example `profile: pi`", m_.profile);
      if (key == "resources") return section(value, key, [&](auto& k, auto& v) { return resources(k, v); });
      if (key == "mounts") return section(value, key, [&](auto& k, auto& v) { return mounts(k, v); });
      if (key == "security") return section(value, key, [&](auto& k, auto& v) { return security(k, v); });
      if (key == "network") return section(value, key, [&](auto& k, auto& v) { return network(k, v); });
      if (key == "ports") return ports(key, value);
      if (key == "git_routes") return git_routes(key, value);
      if (key == "workspace") return workspace_mode(key, value);
      if (key == "agent_env") return agent_env(key, value);
      if (key == "min_context_window") return min_context_window(key, value);
      if (key == kLimaSection) return ok_status();
      if (key == "provision") {
        return section(value, key, [&](auto& k, auto& v) { return allow(k, v, m_.provision_allow_domains); });
      }
      return unknown(value, key);
    });
  }

 private:
  using Handler = std::function<Status(const std::string& key, const YAML::Node& value)>;

  Error error(const YAML::Node& at, const std::string& key, const std::string& what, std::string hint) const {
    YAML::Mark mark = at.Mark();
    std::string where = source_.string();
    if (!mark.is_null()) where += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
    return failed(where + ": " + (key.empty() ? "" : key + ": ") + what, std::move(hint));
  }

  // Calls `handler` with the dotted key of each entry of `map`.
  Status each(const YAML::Node& map, const std::string& prefix, const Handler& handler) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (!it->first.IsScalar()) return error(it->first, prefix, "keys must be plain words", "");
      std::string key = prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
      key_mark_ = it->first.Mark();
      TNK_RETURN_IF_ERROR(handler(key, it->second));
    }
    return ok_status();
  }

  template <class F>
  Status section(const YAML::Node& value, const std::string& key, F&& handler) {
    if (value.IsNull()) return ok_status();
    if (!value.IsMap())
      return error(value, key, "must be a mapping of keys", "for example `" + key + ": {key: value}`");
    return each(value, key, [&](const std::string& k, const YAML::Node& v) { return handler(k, v); });
  }

  Status unknown(const YAML::Node& value, const std::string& key) {
    YAML::Mark mark = key_mark_.is_null() ? value.Mark() : key_mark_;
    m_.unknown_keys.push_back(key + (mark.is_null() ? "" : " (line " + std::to_string(mark.line + 1) + ")"));
    return ok_status();
  }

  Status scalar(const YAML::Node& value, const std::string& key, const std::string& hint, std::string& out) {
    if (value.IsNull()) return ok_status();
    if (!value.IsScalar()) return error(value, key, "must be a single value", hint);
    out = value.Scalar();
    return ok_status();
  }

  Status workspace_mode(const std::string& key, const YAML::Node& value) {
    const std::string hint =
        "use `workspace: direct` (the default: the sandbox writes the project) or `workspace: "
        "review` (its writes wait in a layer for `tnk sandbox apply`)";
    std::string mode;
    TNK_RETURN_IF_ERROR(scalar(value, key, hint, mode));
    if (value.IsNull()) return ok_status();
    if (mode != "direct" && mode != "review") return error(value, key, "unknown mode '" + mode + "'", hint);
    m_.review = mode == "review";
    return ok_status();
  }

  Status resources(const std::string& key, const YAML::Node& value) {
    if (key == "resources.cpus") return cpus(key, value);
    if (key == "resources.memory") return size(key, value, m_.memory_bytes);
    if (key == "resources.disk") return size(key, value, m_.disk_bytes);
    return unknown(value, key);
  }

  Status cpus(const std::string& key, const YAML::Node& value) {
    if (value.IsNull()) return ok_status();
    const std::string hint = "for example `cpus: 2` under `resources:`";
    if (!value.IsScalar()) return error(value, key, "must be a whole number of CPUs", hint);
    const std::string& s = value.Scalar();
    bool digits =
        !s.empty() && s.size() <= 4 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    unsigned n = digits ? static_cast<unsigned>(std::stoul(s)) : 0;
    if (n < 1 || n > kMaxCpus) {
      return error(value, key,
                   "must be a whole number of CPUs from 1 to " + std::to_string(kMaxCpus) + ", got '" + s + "'", hint);
    }
    m_.cpus = n;
    return ok_status();
  }

  Status size(const std::string& key, const YAML::Node& value, std::optional<uint64_t>& out) {
    if (value.IsNull()) return ok_status();
    const std::string hint = "for example `" + key.substr(key.find('.') + 1) + ": 2GiB` (or 512MiB) under `resources:`";
    std::optional<uint64_t> bytes;
    if (value.IsScalar()) {
      if (Result<uint64_t> parsed = tnk::parse_size(value.Scalar()); parsed && *parsed > 0) bytes = *parsed;
    }
    if (!bytes) {
      std::string got = value.IsScalar() ? ", got '" + value.Scalar() + "'" : "";
      return error(value, key, "must be a size such as 2GiB" + got, hint);
    }
    out = *bytes;
    return ok_status();
  }

  Status mounts(const std::string& key, const YAML::Node& value) {
    if (key == "mounts.workspace") {
      std::string path;
      TNK_RETURN_IF_ERROR(scalar(value, key, "for example `workspace: /workspace` under `mounts:`", path));
      if (value.IsNull()) return ok_status();
      if (Status st = validate_workspace_mount(path); !st)
        return error(value, key, st.error().message, st.error().hint);
      m_.workspace_mount = path;
      return ok_status();
    }
    if (key == "mounts.readonly") {
      return list(value, key, ".git/hooks", [&](const YAML::Node& item) -> Status {
        Result<std::string> normal = normalize_readonly_path(item.Scalar());
        if (!normal) return error(item, key, normal.error().message, normal.error().hint);
        add_unique(m_.readonly_paths, *normal);
        return ok_status();
      });
    }
    return unknown(value, key);
  }

  Status security(const std::string& key, const YAML::Node& value) {
    if (key != "security.network") return unknown(value, key);
    const std::string hint = std::string("use one of: ") + kNetworkPolicyNames;
    if (value.IsNull()) return ok_status();
    if (!value.IsScalar()) return error(value, key, "must be a policy name", hint);
    std::optional<NetworkPolicy> policy = parse_network_policy(value.Scalar());
    if (!policy) {
      return error(value, key, "unknown network policy '" + value.Scalar() + "'",
                   hint + (value.Scalar() == "host" ? " (`open` is the closest to the original's `host`)" : ""));
    }
    m_.network = policy;
    return ok_status();
  }

  Status network(const std::string& key, const YAML::Node& value) {
    if (key == "network.open_ports") return open_ports(key, value);
    if (key != "network.provision") return allow(key, value, m_.allow_domains);
    const std::string hint = "use one of: allowlist (the default: @debian, @npm and provision.allow), open, none";
    if (value.IsNull()) return ok_status();
    auto policy = value.IsScalar() ? parse_network_policy(value.Scalar()) : std::nullopt;
    if (!policy || *policy == NetworkPolicy::kInference) {
      return error(value, key, "must be allowlist, open or none (provisioning never needs the inference endpoint)",
                   hint);
    }
    m_.provision_network = policy;
    return ok_status();
  }

  // Ports `open` lets through besides 80 and 443 (the egress proxy refuses the rest).
  Status open_ports(const std::string& key, const YAML::Node& value) {
    return list(value, key, "8080, 22", [&](const YAML::Node& item) -> Status {
      std::optional<uint16_t> port = parse_port(item.Scalar());
      if (!port) {
        return error(item, key, "'" + item.Scalar() + "' is not a port", "write whole numbers from 1 to 65535");
      }
      if (std::find(m_.open_ports.begin(), m_.open_ports.end(), *port) == m_.open_ports.end()) {
        m_.open_ports.push_back(*port);
      }
      return ok_status();
    });
  }

  // The original's specs had `ports:` with no effect; here each entry is a forward from 127.0.0.1 on the host.
  Status ports(const std::string& key, const YAML::Node& value) {
    return list(value, key, "\"8080:3000\"", [&](const YAML::Node& item) -> Status {
      auto forward = parse_port_forward(item.Scalar());
      if (!forward) return error(item, key, forward.error().message, forward.error().hint);
      for (const PortForward& f : m_.ports) {
        if (f.host_port == forward->host_port) {
          return error(item, key, "host port " + std::to_string(f.host_port) + " is forwarded twice",
                       "give each forward its own host port");
        }
      }
      m_.ports.push_back(*forward);
      return ok_status();
    });
  }

  // Route name -> the URL prefix git is pointed away from (url.<route>.insteadOf <prefix>).
  Status git_routes(const std::string& key, const YAML::Node& value) {
    const std::string hint = "for example `git_routes: {github: \"https://github.com/\"}` (a route of tnk.toml)";
    if (value.IsNull()) return ok_status();
    if (!value.IsMap()) return error(value, key, "must be a mapping of route names to URL prefixes", hint);
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!it->first.IsScalar() || !net::valid_route_name(it->first.Scalar())) {
        return error(it->first, key, "route names are letters, digits and '-'", hint);
      }
      const std::string& prefix = it->second.IsScalar() ? it->second.Scalar() : std::string();
      bool url = (prefix.starts_with("https://") || prefix.starts_with("http://")) &&
                 std::none_of(prefix.begin(), prefix.end(), [](char c) { return c <= ' ' || c == 0x7f; });
      if (!url)
        return error(it->second, key, "the prefix of '" + it->first.Scalar() + "' must be an http(s):// URL", hint);
      m_.git_routes[it->first.Scalar()] = prefix;
    }
    return ok_status();
  }

  // The agents whose variables tnk sets (specs/agent_env.h).
  Status agent_env(const std::string& key, const YAML::Node& value) {
    return list(value, key, "openai, anthropic", [&](const YAML::Node& item) -> Status {
      std::optional<AgentApi> api = parse_agent_api(item.Scalar());
      if (!api) {
        return error(item, key, "unknown agent API '" + item.Scalar() + "'",
                     std::string("use any of: ") + kAgentApiNames);
      }
      if (std::find(m_.agent_env.begin(), m_.agent_env.end(), *api) == m_.agent_env.end()) m_.agent_env.push_back(*api);
      return ok_status();
    });
  }

  // The context window the profile's agent needs; `tnk doctor` compares it with the server's.
  Status min_context_window(const std::string& key, const YAML::Node& value) {
    if (value.IsNull()) return ok_status();
    const std::string hint = "for example `min_context_window: 32768` (tokens)";
    const std::string s = value.IsScalar() ? value.Scalar() : "";
    bool digits =
        !s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    uint64_t n = digits ? std::stoull(s) : 0;
    if (n == 0) {
      return error(value, key,
                   "must be a whole number of tokens from 1 to 999999999" + (s.empty() ? "" : ", got '" + s + "'"),
                   hint);
    }
    m_.min_context_window = n;
    return ok_status();
  }

  Status allow(const std::string& key, const YAML::Node& value, std::vector<std::string>& out) {
    if (!key.ends_with(".allow")) return unknown(value, key);
    return list(value, key, "example.com", [&](const YAML::Node& item) -> Status {
      if (Status st = validate_domain(item.Scalar()); !st) return error(item, key, st.error().message, st.error().hint);
      add_unique(out, item.Scalar());
      return ok_status();
    });
  }

  // A sequence of scalars; `each_item` checks and stores one.
  Status list(const YAML::Node& value, const std::string& key, const std::string& example,
              const std::function<Status(const YAML::Node&)>& each_item) {
    if (value.IsNull()) return ok_status();
    const std::string hint = "write a list, for example `" + key.substr(key.find('.') + 1) + ": [" + example + "]`";
    if (!value.IsSequence()) return error(value, key, "must be a list", hint);
    for (const YAML::Node& item : value) {
      if (!item.IsScalar()) return error(item, key, "list items must be single values", hint);
      TNK_RETURN_IF_ERROR(each_item(item));
    }
    return ok_status();
  }

  static void add_unique(std::vector<std::string>& v, const std::string& s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  }

  const fs::path& source_;
  Manifest& m_;
  YAML::Mark key_mark_ = YAML::Mark::null_mark();  // where the key being handled is written
};

}  // namespace

Result<Manifest> parse_manifest(const std::string& yaml_text, const fs::path& source) {
  Manifest manifest;
  manifest.source = source;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    Parser parser(source, manifest);
    TNK_RETURN_IF_ERROR(parser.document(root));
  } catch (const YAML::Exception& e) {
    std::string where = source.string();
    if (!e.mark.is_null()) where += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    return failed(where + ": invalid YAML: " + e.msg,
                  "fix the manifest, or run `tnk init --force` to restore "
                  "the bundled ones");
  }
  return manifest;
}

Result<Manifest> load_manifest(const fs::path& config_dir, std::string_view profile,
                               std::vector<std::string>* warnings) {
  auto warn = [&](std::string message) {
    if (warnings) warnings->push_back(std::move(message));
  };
  TNK_ASSIGN_OR_RETURN(ManifestChoice choice, find_manifest(config_dir, profile));
  if (!choice.path) {
    warn("no manifest for profile '" + std::string(profile) + "' and no " + std::string(kBaseManifest) + " in " +
         manifests_dir(config_dir).string() + ": using the defaults");
    Manifest defaults;
    defaults.profile = std::string(profile);
    return defaults;
  }
  if (choice.fell_back_to_base) {
    warn("no manifest for profile '" + std::string(profile) + "', using " + std::string(kBaseManifest));
  }
  TNK_ASSIGN_OR_RETURN(std::string text, read_trusted_file(*choice.path, "manifest"));
  TNK_ASSIGN_OR_RETURN(Manifest manifest, parse_manifest(text, *choice.path));
  if (!manifest.unknown_keys.empty()) {
    warn(choice.path->string() + ": ignoring keys tnk does not use: " + join(manifest.unknown_keys));
  }
  if (!manifest.allow_domains.empty() && manifest.network != NetworkPolicy::kAllowlist) {
    warn(choice.path->string() + ": network.allow is only used with `security.network: allowlist`");
  }
  if (!manifest.open_ports.empty() && manifest.network != NetworkPolicy::kOpen &&
      manifest.provision_network != NetworkPolicy::kOpen) {
    warn(choice.path->string() +
         ": network.open_ports is only used with `security.network: open` or "
         "`network.provision: open`");
  }
  return manifest;
}

}  // namespace tnk::specs
