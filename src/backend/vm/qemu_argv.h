// The QEMU command line of a vm sandbox as a pure function of its configuration (golden-tested; the
// supervisor only runs it): a microvm with modern virtio-mmio, guest RAM in a shared memfd (virtiofs
// needs it), direct boot of tnk's vmlinux, no default devices, QMP and the agent's virtio-serial port
// on unix sockets, the serial console to a socket of the supervisor's, the root disk as a qcow2 overlay,
// the workspace over vhost-user-fs, and (optionally) a user network whose connections reach only QEMU's
// own network namespace.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "agent/boot_params.h"
#include "core/result.h"

namespace tnk::vm {

inline constexpr const char* kQemuProgram = "qemu-system-x86_64";
// Where the guest reaches the supervisor's relays: QEMU's user network's host address, whose connections
// it makes to 127.0.0.1 of QEMU's own network namespace, the same port (and answers the guest's ARP for
// it, which it does only for its own addresses).
inline constexpr const char* kForwardGuestIp = "10.0.2.2";

// The descriptors an unprivileged QEMU is handed instead of host paths (QemuConfig::handed_files): it
// runs as an id that cannot walk to the state directory or the image cache, so the supervisor opens
// them and QEMU finds them at these numbers.
namespace handed_fd {
inline constexpr int kQmp = 3;        // listening: the QMP monitor (qmp.sock)
inline constexpr int kQmpEvents = 4;  // listening: the event monitor (qmpev.sock)
inline constexpr int kAgent = 5;      // listening: the agent's virtio-serial port (agent.sock)
inline constexpr int kSerial = 6;     // connected to the supervisor's serial.sock
inline constexpr int kVirtiofs = 7;   // connected to virtiofsd's socket
inline constexpr int kGitDir = 8;     // connected to the git dir's virtiofsd
inline constexpr int kDisk = 9;       // the overlay, read-write (fd set 1)
inline constexpr int kDiskRead = 10;  // the overlay, read-only (fd set 1: QEMU probes it read-only first)
inline constexpr int kBaseDisk = 11;  // the overlay's backing file, read-only (fd set 2)
inline constexpr int kKernel = 12;    // vmlinux, read-only (opened again through /proc/self/fd)
inline constexpr int kLast = kKernel;
}  // namespace handed_fd

// A TCP address of QEMU's own network namespace whose connections QEMU hands to the guest (hostfwd).
// The supervisor runs QEMU in an otherwise empty namespace, so only it reaches the port; on another
// address than 127.0.0.1, the guest's own connections (kForwardGuestIp) do not reach it either.
struct HostForward {
  std::string host_ip;
  uint16_t host_port = 0;
  std::string guest_ip;  // the guest's NIC address
  uint16_t guest_port = 0;
};

// The guest's names of the two disks (virtio-mmio devices are named in the order of their -device).
inline constexpr const char* kRootDiskDevice = "/dev/vda";  // the writable overlay
inline constexpr const char* kBootDiskDevice = "/dev/vdb";  // the read-only base disk, the kernel's root

struct QemuConfig {
  std::string program = kQemuProgram;
  bool kvm = false;      // hardware KVM (vm::host_kvm); else TCG
  uint64_t tsc_khz = 0;  // TCG: the host TSC in kHz for tsc_early_khz= (0: not passed)
  int cpus = 1;
  uint64_t memory_mib = 512;
  std::filesystem::path kernel;     // vmlinux
  std::filesystem::path root_disk;  // the sandbox's qcow2 overlay
  // The base disk under it, read-only (QEMU's readonly=on, whatever the guest does): the kernel's root,
  // so that the init it runs is the one tnk put there; init then makes root_disk the root
  // (guest/init.h). Guest root can rewrite its own disk, never this one (security review 3, R3-H2).
  // Empty: a sandbox of an older tnk (VmHostFacts::init_on_overlay), booted from root_disk.
  std::filesystem::path boot_disk;
  std::filesystem::path qmp_socket;  // created by QEMU (server)
  // A second QMP monitor (server) where the supervisor reads QEMU's events; empty: none.
  std::filesystem::path qmp_events_socket;
  std::filesystem::path agent_socket;     // created by QEMU (server); the supervisor connects
  std::filesystem::path virtiofs_socket;  // virtiofsd's socket; empty: no workspace device
  std::filesystem::path git_dir_socket;   // the git dir's virtiofsd (agent::kGitDirTag); empty: none
  // The guest console: QEMU connects to this socket as it starts (the supervisor listens, then caps what
  // it reads into serial.log). A file chardev would let the guest fill the host's disk.
  std::filesystem::path serial_socket;
  std::string init = "/sbin/tnk-agent";  // init= on the kernel command line: on boot_disk
  // tnk-agent's tnk.* kernel parameters (agent/boot_params.h); agent.port also names the virtio-serial
  // port, and the workspace device carries agent::kWorkspaceTag.
  agent::BootParams agent;
  // A user network. QEMU runs in a network namespace of its own with only loopback (processes.h): what
  // the guest connects to is that namespace's 127.0.0.1, where only the supervisor's relays listen.
  bool network = false;
  std::vector<HostForward> host_forwards;  // needs network
  bool quiet = true;                       // `quiet` on the kernel command line (tests turn it off)
  std::vector<std::string> extra_kernel_args;
  std::string name;  // -name, shown in ps; "" for none
  // QEMU opens no host path: the sockets, the disks and the kernel are the descriptors of handed_fd,
  // and the overlay's backing file is the one handed, whatever path its header names (run by root:
  // QEMU runs as an unprivileged id, security review H1).
  bool handed_files = false;
};

// The kernel command line (without init's own arguments).
Result<std::string> kernel_cmdline(const QemuConfig& config);
// The whole argv, argv[0] = config.program. usage_error for values QEMU or the kernel command line
// cannot carry (spaces in kernel parameters, bad forward addresses, zero cpus or memory).
Result<std::vector<std::string>> qemu_argv(const QemuConfig& config);

// QEMU option values separate keys with commas; a literal comma is written twice.
std::string qemu_escape(const std::string& value);

}  // namespace tnk::vm
