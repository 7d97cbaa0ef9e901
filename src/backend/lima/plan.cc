#include "backend/lima/plan.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <exception>

namespace tnk::lima {
namespace {

constexpr uint64_t kMiB = 1024ull * 1024;
constexpr uint64_t kGiB = 1024 * kMiB;

// Every guest port Lima would forward to the host's 127.0.0.1 by default is ignored; the rules the
// profile asks for come first (Lima applies the first rule that matches).
void emit_port_forwards(YAML::Emitter& out, const InstanceSpec& spec) {
  out << YAML::Key << "portForwards" << YAML::Value << YAML::BeginSeq;
  for (const auto& forward : spec.port_forwards) {
    out << YAML::BeginMap;
    out << YAML::Key << "guestPort" << YAML::Value << forward.guest_port;
    out << YAML::Key << "hostIP" << YAML::Value << "127.0.0.1";
    out << YAML::Key << "hostPort" << YAML::Value << (forward.host_port != 0 ? forward.host_port : forward.guest_port);
    out << YAML::EndMap;
  }
  for (const char* guest_ip : {"127.0.0.1", "0.0.0.0"}) {
    out << YAML::BeginMap;
    out << YAML::Key << "guestIP" << YAML::Value << guest_ip;
    out << YAML::Key << "guestPortRange" << YAML::Value << YAML::Flow << YAML::BeginSeq << 1 << 65535 << YAML::EndSeq;
    out << YAML::Key << "proto" << YAML::Value << "any";
    out << YAML::Key << "ignore" << YAML::Value << true;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void emit_image(YAML::Emitter& out, const InstanceSpec& spec) {
  if (!spec.image) {
    out << YAML::Key << "base" << YAML::Value << kBaseTemplate;
    return;
  }
  out << YAML::Key << "images" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "location" << YAML::Value << spec.image->location;
  if (!spec.image->arch.empty()) out << YAML::Key << "arch" << YAML::Value << spec.image->arch;
  if (!spec.image->digest.empty()) out << YAML::Key << "digest" << YAML::Value << spec.image->digest;
  out << YAML::EndMap << YAML::EndSeq;
}

void emit_resources(YAML::Emitter& out, const InstanceSpec& spec) {
  if (spec.cpus) out << YAML::Key << "cpus" << YAML::Value << *spec.cpus;
  if (spec.memory_bytes) out << YAML::Key << "memory" << YAML::Value << format_size(*spec.memory_bytes);
  if (spec.disk_bytes) out << YAML::Key << "disk" << YAML::Value << format_size(*spec.disk_bytes);
}

void emit_document(YAML::Emitter& out, const InstanceSpec& spec) {
  out << YAML::Comment("Lima instance " + spec.id + ", written by tnk (docs/lima-backend.md); rewritten on create.");
  out << YAML::Newline;
  out << YAML::Comment("network policy '" + to_string(spec.network) +
                       "': Lima's user-mode network cannot enforce it from the host (SECURITY.md, lima).");
  out << YAML::BeginMap;
  emit_image(out, spec);
  out << YAML::Key << "vmType" << YAML::Value << "vz";
  emit_resources(out, spec);
  out << YAML::Key << "mountType" << YAML::Value << "virtiofs";
  // Exactly one mount: it replaces the template's (home read-only, /tmp/lima).
  out << YAML::Key << "mounts" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "location" << YAML::Value << spec.project_dir.string();
  out << YAML::Key << "mountPoint" << YAML::Value << spec.mount_point;
  out << YAML::Key << "writable" << YAML::Value << true;
  out << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "containerd" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "system" << YAML::Value << spec.containerd;
  out << YAML::Key << "user" << YAML::Value << false;
  out << YAML::EndMap;
  // No host key, no agent, no X11 reaches the guest.
  out << YAML::Key << "ssh" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "loadDotSSHPubKeys" << YAML::Value << false;
  out << YAML::Key << "forwardAgent" << YAML::Value << false;
  out << YAML::Key << "forwardX11" << YAML::Value << false;
  out << YAML::EndMap;
  emit_port_forwards(out, spec);
  // The host's proxy variables (which may carry credentials) are not copied into the guest.
  out << YAML::Key << "propagateProxyEnv" << YAML::Value << false;
  out << YAML::EndMap;
}

bool needs_quotes(const std::string& word) {
  if (word.empty()) return true;
  return !std::all_of(word.begin(), word.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("-_./:=@%+,").find(c) != std::string_view::npos;
  });
}

}  // namespace

Result<std::string> instance_yaml(const InstanceSpec& spec) {
  YAML::Emitter out;
  try {
    emit_document(out, spec);
  } catch (const std::exception& e) {
    return failed("writing the Lima YAML of " + spec.id + ": " + e.what());
  }
  if (!out.good()) return failed("writing the Lima YAML of " + spec.id + ": " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

std::string format_size(uint64_t bytes) {
  if (bytes != 0 && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + "GiB";
  if (bytes != 0 && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "MiB";
  return std::to_string(bytes);
}

std::vector<std::string> network_limits(NetworkPolicy policy) {
  std::vector<std::string> limits;
  switch (policy) {
    case NetworkPolicy::kNone:
      limits.push_back("'none' is not enforced: the guest keeps Lima's outbound network (internet and host)");
      break;
    case NetworkPolicy::kInference:
      limits.push_back("'inference' is not enforced: the guest reaches the internet, not only the inference endpoint");
      break;
    case NetworkPolicy::kAllowlist:
      limits.push_back("'allowlist' is not enforced: no proxy filters the guest's traffic by domain");
      break;
    case NetworkPolicy::kOpen: break;
  }
  limits.push_back("host.lima.internal reaches every service on the host's 127.0.0.1, not only the inference endpoint");
  limits.push_back("network rules inside the guest would not hold: Lima's default user has passwordless sudo");
  return limits;
}

Argv version_argv() { return {kLimactl, "--version"}; }
Argv list_argv() { return {kLimactl, "list", "--format", "json"}; }

Argv create_argv(const std::string& id, const std::filesystem::path& yaml) {
  return {kLimactl, "--tty=false", "create", "--name", id, yaml.string()};
}

Argv start_argv(const std::string& id) { return {kLimactl, "--tty=false", "start", id}; }

Argv stop_argv(const std::string& id, bool force) {
  if (force) return {kLimactl, "--tty=false", "stop", "--force", id};
  return {kLimactl, "--tty=false", "stop", id};
}

Argv delete_argv(const std::string& id, bool force) {
  if (force) return {kLimactl, "--tty=false", "delete", "--force", id};
  return {kLimactl, "--tty=false", "delete", id};
}

Argv copy_argv(const std::filesystem::path& host_file, const std::string& id, const std::string& guest_path) {
  return {kLimactl, "--tty=false", "copy", host_file.string(), id + ":" + guest_path};
}

Argv prepare_provision_dir_argv(const std::string& id) {
  return shell_argv(id, "/", {}, {"sh", "-c", "rm -rf -- \"$1\" && mkdir -p -- \"$1/lib\"", "sh", kGuestProvisionDir},
                    false);
}

std::string guest_provision_path(const std::string& relative) {
  std::string path = kGuestProvisionDir;  // (appended, not `std::string(...) + "/"`: GCC 12's bug 105651 warns)
  path += '/';
  path += relative;
  return path;
}

Argv shell_argv(const std::string& id, const std::string& workdir, const std::vector<std::string>& env,
                const std::vector<std::string>& argv, bool tty, bool as_root) {
  Argv out = {kLimactl};
  if (!tty) out.push_back("--tty=false");
  out.insert(out.end(), {"shell", "--workdir", workdir, id});
  if (as_root) out.insert(out.end(), {"sudo", "-n"});
  out.insert(out.end(), {"env", "--"});
  out.insert(out.end(), env.begin(), env.end());
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::string display_command(const Argv& argv) {
  std::string line;
  for (const auto& word : argv) {
    if (!line.empty()) line += ' ';
    if (!needs_quotes(word)) {
      line += word;
      continue;
    }
    line += '\'';
    for (char c : word) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

}  // namespace tnk::lima
