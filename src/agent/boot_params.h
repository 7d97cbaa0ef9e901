// What tnk-agent learns at boot, as pure functions so the host tests them: the tnk.* parameters of the
// kernel command line, the /etc/hosts it writes, and where its virtio-serial port is (no udev in the
// guest: /sys/class/virtio-ports/<vportNpM>/name holds each port's name). The host side builds the
// command line from the same keys (boot_cmdline), so both ends agree on them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tnk::agent {

inline constexpr std::string_view kDefaultPortName = "tnk.agent";  // QEMU: virtserialport,name=tnk.agent
inline constexpr std::string_view kWorkspaceTag = "workspace";     // the virtiofs tag of the project
inline constexpr std::string_view kGitDirTag = "gitdir";  // a linked worktree's common git dir (docs/workspace.md)

struct BootParams {
  std::string token;                                 // tnk.token=: the hello must carry it
  std::string port = std::string(kDefaultPortName);  // tnk.port=
  std::string mount;                                 // tnk.mount=: where the workspace goes; empty = not mounted
  std::string git_dir;                               // tnk.gitdir=: where the gitdir share goes; empty = none
  std::string host = "10.0.2.2";                     // tnk.host=: the address host.{lima,tnk}.internal name
  std::string hostname;                              // tnk.hostname=
  std::string ip;                                    // tnk.ip=: eth0's address as A.B.C.D/N; empty = no NIC setup
  // tnk.root=: the writable root disk (a device node) that init mounts and makes its root; the kernel's
  // root is then the read-only disk init itself came from. Empty: stay on the kernel's root.
  std::string root;
};

// Reads the tnk.* words of a kernel command line (other words are ignored; a later word wins).
// A token is required; values with spaces are not supported (the kernel splits on them).
Result<BootParams> parse_boot_params(std::string_view cmdline);

// The tnk.* words for `params`, for the host side's -append.
std::string boot_cmdline(const BootParams& params);

// /etc/hosts for the guest: loopback, the hostname, and the host's names on params.host.
std::string hosts_file(const BootParams& params);

// The device node of the virtio-serial port called `name`: /dev/<entry> for the entry of `sysfs_dir`
// (normally /sys/class/virtio-ports) whose `name` file holds it. nullopt while it does not exist.
std::optional<std::filesystem::path> find_virtio_port(const std::filesystem::path& sysfs_dir, std::string_view name);

// "A.B.C.D/N" -> address and prefix length; an error names the text.
struct Ipv4Prefix {
  uint32_t address = 0;  // host byte order
  int prefix = 0;
};
Result<Ipv4Prefix> parse_ipv4_prefix(std::string_view text);

}  // namespace tnk::agent
