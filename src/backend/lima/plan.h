// The lima backend's plan, as pure data: the Lima instance YAML tnk writes into the sandbox's state
// directory, and every limactl command line it runs. Nothing here touches the OS, so the whole plan
// is golden-tested (tests/unit/golden/lima/) without Lima. Only limactl.h runs these argvs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "net/policy.h"

namespace tnk::lima {

using Argv = std::vector<std::string>;

inline constexpr const char* kLimactl = "limactl";
// In $XDG_STATE_HOME/tnk/sandboxes/<id>/: the YAML the instance was created from (rewritten on create).
inline constexpr const char* kInstanceYamlFile = "lima.yaml";
// Lima's Ubuntu LTS template (`base:` needs Lima 1.0 or newer).
inline constexpr const char* kBaseTemplate = "template://ubuntu";
// Where provisioning files are copied inside the guest: the layout the scripts expect.
inline constexpr const char* kGuestProvisionDir = "/tmp/tnk-provision";

// A guest image pinned by the profile instead of the template's (manifest `lima.image`).
struct PinnedImage {
  std::string location;  // URL or host path of a cloud image
  std::string arch;      // "aarch64" or "x86_64"; empty: Lima's default (the host's)
  std::string digest;    // "sha256:<hex>"; empty: unchecked
};

// Everything the instance YAML is a function of.
struct InstanceSpec {
  std::string id;
  std::filesystem::path project_dir;  // the only host directory shared (read-write)
  std::string mount_point;            // where it appears in the guest
  std::optional<unsigned> cpus;       // nullopt: Lima's default
  std::optional<uint64_t> memory_bytes;
  std::optional<uint64_t> disk_bytes;
  NetworkPolicy network = NetworkPolicy::kInference;
  // The manifest's `ports:` (host:guest, on the host's 127.0.0.1); none unless the profile asks.
  // A host port of 0 ("any free port") becomes the guest port: Lima needs a fixed one.
  std::vector<PortForward> port_forwards;
  bool containerd = false;           // manifest `lima.containerd`
  std::optional<PinnedImage> image;  // nullopt: kBaseTemplate
};

// The instance YAML (Lima's lima.yaml schema), emitted with yaml-cpp. Fails only when the emitter does.
Result<std::string> instance_yaml(const InstanceSpec& spec);

// "4GiB", "1536MiB": the exact size in the largest unit that divides it (Lima's syntax).
std::string format_size(uint64_t bytes);

// What Lima's user-mode network cannot enforce of `policy` from the host, one sentence each. Never
// empty: Lima offers no host-side egress control at all (SECURITY.md, "lima").
std::vector<std::string> network_limits(NetworkPolicy policy);

// The limactl command lines. `--tty=false` keeps limactl from opening editors or prompts.
Argv version_argv();                                                         // limactl --version
Argv list_argv();                                                            // list --format json
Argv create_argv(const std::string& id, const std::filesystem::path& yaml);  // create --name <id> <yaml>
Argv start_argv(const std::string& id);
Argv stop_argv(const std::string& id, bool force);
Argv delete_argv(const std::string& id, bool force);
Argv copy_argv(const std::filesystem::path& host_file, const std::string& id, const std::string& guest_path);

// Provisioning's guest side: the command that empties kGuestProvisionDir (so that no file of an earlier
// run lingers: the original's `copy --recursive` nested lib/lib on a second run, its bug 32), and where a
// provisioning file (a script, or lib/<name>) is copied below it.
Argv prepare_provision_dir_argv(const std::string& id);
std::string guest_provision_path(const std::string& relative);

// `limactl shell --workdir <workdir> <id> [sudo -n] env -- K=V... <argv>`: Lima quotes each word for
// the guest's shell, so argv reaches the guest unchanged; `env` sets exactly the contract's variables
// on top of the guest user's login environment. tty = false adds --tty=false (no terminal in the
// guest); as_root runs it through sudo (Lima's default user may).
Argv shell_argv(const std::string& id, const std::string& workdir, const std::vector<std::string>& env,
                const std::vector<std::string>& argv, bool tty, bool as_root = false);

// One line per argv, words quoted for a POSIX shell where needed: for showing, never for running.
std::string display_command(const Argv& argv);

}  // namespace tnk::lima
