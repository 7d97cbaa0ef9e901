// Sandbox manifests (sandbox.d/manifests/*.yaml): what a profile asks of its sandbox. Keys and
// meaning: docs/specs.md. Manifests of the original tnk-specs load unchanged; keys tnk does not
// know (`image:`, `security.workspace_mode`) are collected, not fatal.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "net/policy.h"
#include "specs/agent_env.h"

namespace tnk::specs {

inline constexpr std::string_view kDefaultWorkspaceMount = "/workspace";
// The section a manifest keeps for the lima backend, which reads it itself (backend/lima/manifest_keys.h).
inline constexpr const char* kLimaSection = "lima";

struct Manifest {
  std::string profile;                                                // `profile:` as written (informational)
  std::optional<unsigned> cpus;                                       // resources.cpus
  std::optional<uint64_t> memory_bytes;                               // resources.memory
  std::optional<uint64_t> disk_bytes;                                 // resources.disk
  std::string workspace_mount = std::string(kDefaultWorkspaceMount);  // mounts.workspace
  std::optional<NetworkPolicy> network;                               // security.network
  std::vector<std::string> allow_domains;                             // network.allow: what `allowlist` lets through
  std::vector<std::string> readonly_paths;                            // mounts.readonly: project-relative, normalized
  bool review = false;  // `workspace: review`: writes held in a layer until applied (docs/workspace.md)
  std::vector<std::string> provision_allow_domains;  // provision.allow: what provisioning may reach
  std::optional<NetworkPolicy> provision_network;    // network.provision: none | allowlist | open
  std::vector<uint16_t> open_ports;                  // network.open_ports: `open` beyond 80, 443
  std::vector<PortForward> ports;                    // ports: host:guest forwards, on 127.0.0.1
  std::map<std::string, std::string>
      git_routes;                              // git_routes: tnk.toml route name -> URL prefix git fetches through it
  std::vector<AgentApi> agent_env;             // agent_env: the agent settings tnk sets
  std::optional<uint64_t> min_context_window;  // min_context_window: tokens (doctor)
  std::vector<std::string> unknown_keys;       // "image (line 3)", in file order
  std::filesystem::path source;                // the file it came from; empty for defaults
};

// Parses one manifest. Errors name "<source>:<line>:<column>" (1-based) and the key.
Result<Manifest> parse_manifest(const std::string& yaml_text, const std::filesystem::path& source);

// The manifest for `profile` (find_manifest's lookup order), parsed. Without any manifest, the
// defaults. Things the user should hear about (fallback to base, unknown keys, an unused
// network.allow) are appended to *warnings (may be null); nothing is printed.
Result<Manifest> load_manifest(const std::filesystem::path& config_dir, std::string_view profile,
                               std::vector<std::string>* warnings);

// Domain names for network.allow / provision.allow: lowercase letters, digits, '-' and '.', at least
// two labels, optionally "*." in front (that domain's subdomains).
// Besides domains, network.allow and provision.allow take registries by name: @debian is the apt
// mirror the image was built from, @npm the registry the host's npm is configured for.
inline constexpr std::string_view kRegistryNames[] = {"@debian", "@npm"};
Status validate_domain(std::string_view domain);
// mounts.workspace: absolute, no "..", no control characters, not "/" or a system directory.
Status validate_workspace_mount(std::string_view path);
// mounts.readonly entries: project-relative, no "..", no control characters. Returns the normal form.
Result<std::string> normalize_readonly_path(std::string_view path);

}  // namespace tnk::specs
