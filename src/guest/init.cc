#include "guest/init.h"

#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "agent/boot_params.h"
#include "core/files.h"
#include "guest/bridge.h"
#include "guest/grow_root.h"
#include "guest/server.h"

#ifndef TNK_VERSION
#define TNK_VERSION "dev"
#endif

namespace tnk::guest {
namespace {

void say(const std::string& text) { std::fprintf(stderr, "tnk-agent: %s\n", text.c_str()); }

struct MountStep {
  const char* source;
  const char* target;
  const char* type;
  unsigned long flags;
  const char* data;
};

// In this order: /dev/pts and /dev/shm live on /dev.
constexpr MountStep kMounts[] = {
    {"proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr},
    {"sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr},
    {"devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755"},
    {"devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,gid=5"},
    {"shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"},
    {"tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"},
    {"tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"},
};

void mount_one(const char* source, const char* target, const char* type, unsigned long flags, const char* data) {
  ::mkdir(target, 0755);
  if (::mount(source, target, type, flags, data) != 0 && errno != EBUSY) {
    say(std::string("cannot mount ") + type + " on " + target + ": " + std::strerror(errno));
  }
}

// The kernel opens /dev/console for PID 1 only when it exists before /dev is mounted.
void console_stdio() {
  int fd = ::open("/dev/console", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return;
  for (int target = 0; target < 3; ++target) {
    if (::fcntl(target, F_GETFD) < 0) ::dup2(fd, target);
  }
  if (fd > 2) ::close(fd);
  // /dev/ptmx must be the devpts instance's: devtmpfs' own node is fine on a modern kernel, a link is safer.
  ::unlink("/dev/ptmx");
  (void)!::symlink("pts/ptmx", "/dev/ptmx");
}

void interface_up(int sock, const char* name, const agent::Ipv4Prefix* address) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
  if (address) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&ifr.ifr_addr);
    sin->sin_family = AF_INET;
    sin->sin_addr.s_addr = htonl(address->address);
    if (::ioctl(sock, SIOCSIFADDR, &ifr) != 0) say(std::string("cannot set the address of ") + name);
    sin->sin_addr.s_addr = htonl(address->prefix == 32 ? 0xffffffffu : ~(0xffffffffu >> address->prefix));
    if (::ioctl(sock, SIOCSIFNETMASK, &ifr) != 0) say(std::string("cannot set the netmask of ") + name);
  }
  if (::ioctl(sock, SIOCGIFFLAGS, &ifr) != 0) return say(std::string("no network interface ") + name);
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
  if (::ioctl(sock, SIOCSIFFLAGS, &ifr) != 0) say(std::string("cannot bring up ") + name);
}

void setup_network(const agent::BootParams& params) {
  int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return say("no IPv4 socket: the network stays down");
  interface_up(sock, "lo", nullptr);
  if (!params.ip.empty()) {
    auto address = agent::parse_ipv4_prefix(params.ip);
    if (address) interface_up(sock, "eth0", &*address);
  }
  ::close(sock);
}

// Port forwards and the proxy check reach the guest through it (guest/bridge.h), and sessions the SSH
// routes' agent; only with a NIC.
void start_connect_bridge(const agent::BootParams& params) {
  auto address = params.ip.empty() ? Result<agent::Ipv4Prefix>(failed("no NIC")) : agent::parse_ipv4_prefix(params.ip);
  if (!address) return;
  in_addr relay_host{};
  ::inet_pton(AF_INET, params.host.c_str(), &relay_host);  // checked by parse_boot_params
  if (start_bridge(address->address, ntohl(relay_host.s_addr)) < 0) say("cannot start the connect bridge");
  if (start_ssh_agent_bridge(ntohl(relay_host.s_addr)) < 0) say("cannot start the SSH agent's bridge");
}

// A file the agent writes at every boot (/etc/hosts, /etc/resolv.conf): left alone when it already
// holds `content` (a restart of the same sandbox), so the boot dirties nothing on the root disk that the
// first command's syncfs would have to write; else replaced by rename, so a reader never sees half of it,
// but not fsynced. write_file_atomic's fsyncs (ext4 journal commits, each a virtio-blk flush that QEMU
// turns into a host fsync of the overlay) made the agent's boot steps 46 ms instead of 30 under TCG.
Status write_boot_file(const std::string& path, const std::string& content, mode_t mode) {
  if (auto old = read_file(path); old && *old == content) return ok_status();
  std::string tmp = path + ".tnk-agent";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return sys_error(errno, "cannot create " + tmp);
  Status written = write_all(fd, content, tmp);
  ::close(fd);
  if (written.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) written = sys_error(errno, "cannot replace " + path);
  if (!written.ok()) ::unlink(tmp.c_str());
  return written;
}

// The host's virtiofs share `tag` at `path`, made if missing.
void mount_share(std::string_view tag, const std::string& path) {
  Status dirs = make_dirs(path, 0755);
  if (!dirs.ok()) say(dirs.error().message);
  mount_one(std::string(tag).c_str(), path.c_str(), "virtiofs", MS_NOSUID | MS_NODEV, nullptr);
}

void boot(const agent::BootParams& params) {
  if (std::string grown = grow_root_fs(); !grown.empty()) say(grown);
  if (!params.hostname.empty() && ::sethostname(params.hostname.data(), params.hostname.size()) != 0) {
    say("cannot set the hostname");
  }
  Status hosts = write_boot_file("/etc/hosts", agent::hosts_file(params), 0644);
  if (!hosts.ok()) say(hosts.error().message);
  // No DNS server, as in an ns sandbox: names outside resolve only through the host's proxy.
  Status resolv = write_boot_file("/etc/resolv.conf", "", 0644);
  if (!resolv.ok()) say(resolv.error().message);
  setup_network(params);
  start_connect_bridge(params);
  if (!params.mount.empty()) mount_share(agent::kWorkspaceTag, params.mount);
  // A linked worktree's common git dir, at its own host path so that the project's .git file resolves.
  if (!params.git_dir.empty()) mount_share(agent::kGitDirTag, params.git_dir);
}

// The port appears once the virtio-serial driver has probed it (no udev: read sysfs, devtmpfs has the node).
int open_port(const std::string& name) {
  for (int attempt = 0; attempt < 500; ++attempt) {
    if (auto path = agent::find_virtio_port("/sys/class/virtio-ports", name)) {
      int fd = ::open(path->c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
      if (fd >= 0) return fd;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

// While no host is connected, the port polls as POLLHUP: reap children, drop stale bytes, and look again.
void wait_for_host(guest::AgentServer& server, int port) {
  char scratch[4096];
  for (;;) {
    pollfd p{port, POLLIN, 0};
    if (::poll(&p, 1, 0) >= 0 && !(p.revents & POLLHUP)) return;
    while (::read(port, scratch, sizeof scratch) > 0) {
    }
    pollfd child{server.child_fd(), POLLIN, 0};
    ::poll(&child, 1, 100);
    server.reap();
  }
}

[[noreturn]] void power_off() {
  say("powering off");
  ::kill(-1, SIGTERM);
  for (int i = 0; i < 20 && ::waitpid(-1, nullptr, WNOHANG) >= 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(-1, SIGKILL);
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  ::sync();
  // Power-off needs ACPI (or another power driver); without it the kernel only halts, and QEMU would
  // stay up. A reboot ends QEMU instead when it runs with -no-reboot, as the vm backend starts it.
  struct stat acpi {};
  ::reboot(::stat("/sys/firmware/acpi", &acpi) == 0 ? RB_POWER_OFF : RB_AUTOBOOT);
  for (;;) ::pause();  // reboot() does not return for PID 1; never exit (that panics the kernel)
}

}  // namespace

// Makes the writable root disk `device` the root, as switch_root does: mounted over a directory of the
// kernel's devtmpfs (the read-only disk has no directory to spare), moved onto /, chrooted into. The
// read-only disk this init was run from stays mounted beneath, out of reach (security review 3, R3-H2:
// the guest's root cannot change the init that runs next).
Status switch_root(const std::string& device) {
  constexpr const char* kNewRoot = "/dev/.tnk-root";
  if (::mkdir(kNewRoot, 0700) != 0 && errno != EEXIST) return sys_error(errno, std::string("cannot make ") + kNewRoot);
  if (::mount(device.c_str(), kNewRoot, "ext4", 0, nullptr) != 0) return sys_error(errno, "cannot mount " + device);
  if (::chdir(kNewRoot) != 0 || ::mount(".", "/", nullptr, MS_MOVE, nullptr) != 0 || ::chroot(".") != 0 ||
      ::chdir("/") != 0) {
    return sys_error(errno, "cannot make " + device + " the root");
  }
  return ok_status();
}

// The boot parameters, read with /proc mounted for the purpose on the kernel's root (the new root gets its own).
Result<agent::BootParams> boot_params() {
  mount_one("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  auto cmdline = read_file("/proc/cmdline");
  ::umount2("/proc", MNT_DETACH);
  if (!cmdline) return cmdline.error();
  return agent::parse_boot_params(*cmdline);
}

void run_as_init() {
  auto params = boot_params();
  if (params && !params->root.empty()) {
    if (Status switched = switch_root(params->root); !switched.ok()) params = switched.error();
  }
  for (const auto& m : kMounts) mount_one(m.source, m.target, m.type, m.flags, m.data);
  console_stdio();
  if (!params) {
    say(params.error().message);
    power_off();
  }
  boot(*params);
  int port = open_port(params->port);
  auto server = guest::AgentServer::create({params->token, std::string("tnk-agent ") + TNK_VERSION});
  if (port < 0 || !server) {
    say(port < 0 ? "no virtio-serial port named " + params->port : server.error().message);
    power_off();
  }
  say("ready");
  for (;;) {
    wait_for_host(**server, port);
    auto end = (*server)->serve(port);
    if (!end) say(end.error().message);
    if (end && *end == guest::ConnectionEnd::kRefused) say("refused a host connection that broke the protocol");
    if (end && *end == guest::ConnectionEnd::kPoweroff) break;
  }
  power_off();
}

}  // namespace tnk::guest
