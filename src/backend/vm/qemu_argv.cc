#include "backend/vm/qemu_argv.h"

#include <algorithm>
#include <tuple>

namespace tnk::vm {
namespace {

// A kernel command-line value: no spaces, quotes or control characters (the kernel splits on
// spaces; tnk-agent reads values verbatim).
Status check_kernel_value(const std::string& key, const std::string& value) {
  bool ok = std::all_of(value.begin(), value.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u < 0x7f && c != '"' && c != '\'' && c != '\\';
  });
  if (!ok) {
    return usage_error("cannot put " + key + "='" + value + "' on the guest kernel command line",
                       "use a value without spaces, quotes or control characters");
  }
  return ok_status();
}

// An address in a hostfwd rule: QEMU's option parser splits on commas, its rule parser on ':' and '-'.
Status check_forward_address(const std::string& address) {
  bool ok = !address.empty() &&
            std::all_of(address.begin(), address.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
  if (!ok)
    return usage_error("cannot pass '" + address + "' as a QEMU host forward address", "use a dotted IPv4 address");
  return ok_status();
}

// restrict=off, named because it matters: QEMU's user network connects out for the guest, from QEMU's
// own network namespace, which has only loopback. A connection to 10.0.2.2 (kForwardGuestIp) reaches
// that namespace's 127.0.0.1, where the supervisor's relays listen; every other address is unreachable
// there. Before, restrict=on let only guestfwd out, which started a process (socat) per guest connection
// (security review M5).
Result<std::string> netdev_value(const QemuConfig& config) {
  std::string value = "user,id=net0,restrict=off";
  for (const auto& h : config.host_forwards) {
    if (h.host_port == 0 || h.guest_port == 0) return usage_error("a host forward needs both ports");
    TNK_RETURN_IF_ERROR(check_forward_address(h.host_ip));
    TNK_RETURN_IF_ERROR(check_forward_address(h.guest_ip));
    value += ",hostfwd=tcp:" + h.host_ip + ":" + std::to_string(h.host_port) + "-" + h.guest_ip + ":" +
             std::to_string(h.guest_port);
  }
  return value;
}

void add(std::vector<std::string>& argv, std::initializer_list<std::string> words) {
  argv.insert(argv.end(), words.begin(), words.end());
}

}  // namespace

std::string qemu_escape(const std::string& value) {
  std::string out;
  for (char c : value) {
    out += c;
    if (c == ',') out += ',';
  }
  return out;
}

Result<std::string> kernel_cmdline(const QemuConfig& config) {
  std::vector<std::pair<std::string, std::string>> params = {
      {"console", "ttyS0"},   {"reboot", "t"},
      {"panic", "-1"},        {"root", config.boot_disk.empty() ? kRootDiskDevice : kBootDiskDevice},
      {"rootfstype", "ext4"},
  };
  if (!config.kvm && config.tsc_khz > 0) params.emplace_back("tsc_early_khz", std::to_string(config.tsc_khz));
  if (!config.kvm) {
    // Every TCG vCPU reads the one host clock, but the kernel found a multi-CPU guest's TSCs
    // "unsynchronized" and fell back to jiffies: clock_gettime() then moved in 10 ms steps.
    params.emplace_back("tsc", "reliable");
    // As a KVM guest does: no check that the IO-APIC delivers the timer (QEMU's does); ~40 ms under TCG.
    params.emplace_back("no_timer_check", "");
    // The local APIC timer's calibration against the PIT took ~250 ms of a ~1 s TCG boot; a lone CPU
    // ticks from the PIT instead. Not with more CPUs: the PIT's ticks broadcast to each slowed them down.
    if (config.cpus == 1) params.emplace_back("noapictimer", "");
  }
  // No BSD pty pairs (nothing in a Debian userland opens them): creating 256 took ~55 ms of a TCG boot.
  params.emplace_back("pty.legacy_count", "0");
  params.emplace_back("init", config.init);
  std::string line = config.quiet ? "quiet" : "";
  auto append = [&line](const std::string& word) { line += (line.empty() ? "" : " ") + word; };
  append(config.boot_disk.empty() ? "rw" : "ro");
  for (const auto& [key, value] : params) {  // an empty value: a flag
    TNK_RETURN_IF_ERROR(check_kernel_value(key, value));
    append(value.empty() ? key : key + "=" + value);
  }
  // tnk-agent's own words, as agent/ writes them; a value with a space would split into two words.
  for (const std::string& field : {config.agent.token, config.agent.port, config.agent.host, config.agent.mount,
                                   config.agent.hostname, config.agent.ip}) {
    TNK_RETURN_IF_ERROR(check_kernel_value("a tnk-agent parameter", field));
  }
  agent::BootParams agent = config.agent;
  if (!config.boot_disk.empty()) agent.root = kRootDiskDevice;
  append(agent::boot_cmdline(agent));
  for (const auto& extra : config.extra_kernel_args) {
    TNK_RETURN_IF_ERROR(check_kernel_value("kernel argument", extra));
    append(extra);
  }
  return line;
}

namespace {

// KVM, or TCG tuned for a guest that runs git and compilers.
void add_accelerator(std::vector<std::string>& argv, bool kvm) {
  if (kvm) {
    add(argv, {"-accel", "kvm", "-cpu", "host,-arch-capabilities"});
  } else {
    // tb-size=64: TCG's buffer of translated code (1 GiB by default, filled as the guest runs new code and
    // never given back) held ~200 MiB of QEMU's RSS after git, perl and a few hundred commands; capped at
    // 64 MiB those ran no slower (16 MiB did: git status +40%).
    // -erms,-fsrm: without "fast strings", the guest kernel and glibc copy and clear memory 8 bytes or a
    // vector at a time instead of with `rep movsb/stosb`, which TCG runs a byte per step: writing 64 MiB
    // to tmpfs took 31% less time, sha256sum over /usr/bin 20% less.
    add(argv, {"-accel", "tcg,tb-size=64", "-cpu", "max,-erms,-fsrm"});
  }
}

}  // namespace

Result<std::vector<std::string>> qemu_argv(const QemuConfig& c) {
  if (c.cpus < 1 || c.cpus > 255) return usage_error("a vm needs 1 to 255 cpus, not " + std::to_string(c.cpus));
  if (c.memory_mib < 64) return usage_error("a vm needs at least 64 MiB of memory");
  if (c.kernel.empty() || c.root_disk.empty() || c.qmp_socket.empty() || c.agent_socket.empty() ||
      c.serial_socket.empty()) {
    return usage_error("the QEMU configuration lacks a kernel, disk or socket path");
  }
  if (!c.host_forwards.empty() && !c.network) return usage_error("host forwards need the network");
  TNK_ASSIGN_OR_RETURN(std::string cmdline, kernel_cmdline(c));
  const std::string mem = std::to_string(c.memory_mib);
  std::vector<std::string> argv = {c.program};
  if (!c.name.empty()) add(argv, {"-name", qemu_escape(c.name)});
  // acpi=off: tnk's kernel has no ACPI, and only without it does QEMU announce the virtio-mmio devices
  // on the kernel command line (virtio_mmio.device=...); the CPUs come from the MP table.
  add(argv,
      {"-M", "microvm,x-option-roms=off,acpi=off,memory-backend=mem", "-global", "virtio-mmio.force-legacy=false"});
  add_accelerator(argv, c.kvm);
  add(argv,
      {"-smp", std::to_string(c.cpus), "-m", mem, "-object", "memory-backend-memfd,id=mem,size=" + mem + "M,share=on"});
  add(argv, {"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot"});
  // QEMU's own seccomp filter, everything denied: QEMU starts no process (its user network needs no
  // guestfwd command), changes no id, and has no capability to elevate with anyway (rootless, and run
  // by root: processes.h); no_new_privs is set before it execs.
  add(argv, {"-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"});
  // Each socket by its path, or (handed_files) by the descriptor the supervisor hands QEMU.
  auto socket = [&c](const std::filesystem::path& path, int fd) {
    return c.handed_files ? "fd=" + std::to_string(fd) : "path=" + qemu_escape(path.string());
  };
  add(argv, {"-kernel", c.handed_files ? "/proc/self/fd/" + std::to_string(handed_fd::kKernel) : c.kernel.string(),
             "-append", cmdline});
  add(argv,
      {"-chardev", "socket,id=serial0," + socket(c.serial_socket, handed_fd::kSerial), "-serial", "chardev:serial0"});
  add(argv, {"-chardev", "socket,id=qmp," + socket(c.qmp_socket, handed_fd::kQmp) + ",server=on,wait=off", "-mon",
             "chardev=qmp,mode=control"});
  if (!c.qmp_events_socket.empty()) {
    add(argv,
        {"-chardev", "socket,id=qmpev," + socket(c.qmp_events_socket, handed_fd::kQmpEvents) + ",server=on,wait=off",
         "-mon", "chardev=qmpev,mode=control"});
  }
  add(argv, {"-device", "virtio-serial-device", "-chardev",
             "socket,id=agent," + socket(c.agent_socket, handed_fd::kAgent) + ",server=on,wait=off", "-device",
             "virtserialport,chardev=agent,name=" + qemu_escape(c.agent.port)});
  // werror=enospc (QEMU's default, named because tnk relies on it): a write that finds the host's file
  // system full pauses the guest instead of failing in it; the supervisor sees the event on qmpev and
  // ends the sandbox with an error that names the disk (processes.h, QmpEvents).
  std::string drive = "id=root,file=" + qemu_escape(c.root_disk.string());
  std::string boot = "id=boot,file=" + qemu_escape(c.boot_disk.string());
  if (c.handed_files) {
    // The overlay from fd set 1, its backing file from set 2: the path in the overlay's header is
    // never opened.
    add(argv, {"-add-fd", "fd=" + std::to_string(handed_fd::kDisk) + ",set=1", "-add-fd",
               "fd=" + std::to_string(handed_fd::kDiskRead) + ",set=1", "-add-fd",
               "fd=" + std::to_string(handed_fd::kBaseDisk) + ",set=2"});
    drive = "id=root,file=/dev/fdset/1,backing.driver=raw,backing.file.filename=/dev/fdset/2";
    boot = "id=boot,file=/dev/fdset/2";
  }
  // In this order: the guest names the first kRootDiskDevice, the second kBootDiskDevice.
  add(argv, {"-drive", drive + ",format=qcow2,if=none,cache=writeback,discard=unmap,detect-zeroes=unmap,werror=enospc",
             "-device", "virtio-blk-device,drive=root"});
  if (!c.boot_disk.empty())
    add(argv, {"-drive", boot + ",format=raw,if=none,readonly=on", "-device", "virtio-blk-device,drive=boot"});
  // Under TCG, event_idx=off: with event-index suppression a guest (QEMU 7.2, its C virtiofsd,
  // virtio-mmio) now and then waited forever on /workspace with every request answered in the ring:
  // the used index had passed the index at which the guest asked to be woken, and no wakeup came
  // (bench/vm.sh's workspace step hung in about one run in ten). TCG with one vCPU emits none of the
  // guest's memory barriers, and virtiofsd is another process on the same ring. Without the event index
  // the device signals every batch of completions unless the guest turned interrupts off; under KVM the
  // barriers are real and the event index stays (docs/vm-backend.md, "Measured").
  const std::string fs_features = c.kvm ? "" : ",event_idx=off";
  for (const auto& [path, fd, id, tag] :
       {std::tuple{&c.virtiofs_socket, handed_fd::kVirtiofs, "vfs", agent::kWorkspaceTag},
        std::tuple{&c.git_dir_socket, handed_fd::kGitDir, "vfsgit", agent::kGitDirTag}}) {
    if (path->empty()) continue;
    add(argv, {"-chardev", "socket,id=" + std::string(id) + "," + socket(*path, fd), "-device",
               "vhost-user-fs-device,chardev=" + std::string(id) + ",tag=" + std::string(tag) + fs_features});
  }
  if (c.network) {
    TNK_ASSIGN_OR_RETURN(std::string netdev, netdev_value(c));
    add(argv, {"-netdev", netdev, "-device", "virtio-net-device,netdev=net0"});
  }
  return argv;
}

}  // namespace tnk::vm
