#include "host/host_probe.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <sstream>
#include <vector>

#include "core/files.h"
#include "core/program_path.h"

namespace tnk::host {
namespace {

namespace fs = std::filesystem;

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool accessible(const std::string& path, int mode) {
  return ::faccessat(AT_FDCWD, path.c_str(), mode, AT_EACCESS) == 0;
}

// A small /proc or /sys file, trimmed; nullopt when it cannot be read.
std::optional<std::string> read_knob(const std::string& path) {
  auto text = read_file(path);
  if (!text.ok()) return std::nullopt;
  std::string s = *text;
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

void read_cpu_flags(const fs::path& root, HostFacts& facts) {
  auto text = read_file(path_under(root, "/proc/cpuinfo"));
  if (!text.ok()) return;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') == std::string::npos ? line.size() : line.find(':') + 1));
    std::string flag;
    while (words >> flag) {
      facts.cpu_vmx = facts.cpu_vmx || flag == "vmx";
      facts.cpu_svm = facts.cpu_svm || flag == "svm";
    }
    return;  // every CPU lists the same flags
  }
}

bool filesystem_listed(const fs::path& root, const std::string& fs_name) {
  auto text = read_file(path_under(root, "/proc/filesystems"));
  if (!text.ok()) return false;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string word, last;
    while (words >> word) last = word;
    if (last == fs_name) return true;
  }
  return false;
}

void read_userns(const fs::path& root, bool privileged, HostFacts& facts) {
  auto aa = read_knob(path_under(root, "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"));
  if (aa) facts.apparmor_restricts_userns = *aa == "1";
  auto max = read_knob(path_under(root, "/proc/sys/user/max_user_namespaces"));
  auto clone = read_knob(path_under(root, "/proc/sys/kernel/unprivileged_userns_clone"));
  if (!max) {
    facts.userns_note = "this kernel has no user namespaces (/proc/sys/user/max_user_namespaces is missing)";
  } else if (*max == "0") {
    facts.userns_note = "user namespaces are disabled (user.max_user_namespaces = 0)";
  } else if (!privileged && clone && *clone == "0") {
    facts.userns_note = "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)";
  } else if (!privileged && facts.apparmor_restricts_userns.value_or(false)) {
    facts.userns_note =
        "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)";
  } else {
    facts.userns_possible = true;
  }
}

void read_kvm(const fs::path& root, const Env& env, HostFacts& facts) {
  std::string kvm = path_under(root, "/dev/kvm");
  facts.dev_kvm_exists = exists(kvm);
  facts.dev_kvm_rw = facts.dev_kvm_exists && accessible(kvm, R_OK | W_OK);
  facts.kvm_intel = exists(path_under(root, "/sys/module/kvm_intel"));
  facts.kvm_amd = exists(path_under(root, "/sys/module/kvm_amd"));
  facts.kvm_pvm = exists(path_under(root, "/sys/module/kvm_pvm"));
  read_cpu_flags(root, facts);
  facts.pvm_guest_kernel = env.get_nonempty(kPvmGuestKernelEnv).value_or("");
  if (!facts.pvm_guest_kernel.empty()) {
    struct stat st {};
    facts.pvm_guest_kernel_configured = ::stat(facts.pvm_guest_kernel.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                                        accessible(facts.pvm_guest_kernel, R_OK);
  }
}

}  // namespace

HostFacts gather_host_facts_at(const Env& env, const fs::path& root, bool privileged) {
  HostFacts facts;
  read_kvm(root, env, facts);
  std::string path_var = env.get("PATH").value_or("");
  facts.qemu_path = find_on_path("qemu-system-x86_64", path_var, root);
  facts.qemu_found = !facts.qemu_path.empty();
  facts.limactl_path = find_on_path("limactl", path_var, root);
  facts.limactl_found = !facts.limactl_path.empty();
  read_userns(root, privileged, facts);
  facts.overlay_possible = filesystem_listed(root, "overlay");
  facts.dev_vhost_vsock_exists = exists(path_under(root, "/dev/vhost-vsock"));
  for (const char* candidate : {"/usr/lib/qemu/virtiofsd", "/usr/libexec/virtiofsd", "/usr/lib/virtiofsd"}) {
    if (is_executable_file(path_under(root, candidate))) {
      facts.virtiofsd_path = path_under(root, candidate);
      break;
    }
  }
  if (facts.virtiofsd_path.empty()) facts.virtiofsd_path = find_on_path("virtiofsd", path_var, root);
  struct utsname uts {};
  facts.is_macos = ::uname(&uts) == 0 && std::string(uts.sysname) == "Darwin";
  return facts;
}

HostFacts gather_host_facts(const Env& env) { return gather_host_facts_at(env, "/", ::geteuid() == 0); }

namespace {

// Whether KVM can run our guest kernel here, ignoring QEMU; the why is one line for the user.
AccelChoice kvm_verdict(const HostFacts& f) {
  if (!f.dev_kvm_exists) return {Accel::kTcg, "no /dev/kvm"};
  const std::string not_rw = "/dev/kvm is not readable and writable by this user (add yourself to the kvm group)";
  if ((f.kvm_intel && f.cpu_vmx) || (f.kvm_amd && f.cpu_svm)) {
    if (!f.dev_kvm_rw) return {Accel::kTcg, not_rw};
    return {Accel::kKvm, f.kvm_intel && f.cpu_vmx ? "hardware KVM (kvm_intel, vmx)" : "hardware KVM (kvm_amd, svm)"};
  }
  if (f.kvm_pvm) {
    if (f.pvm_guest_kernel_configured) {
      if (!f.dev_kvm_rw) return {Accel::kTcg, not_rw};
      return {Accel::kKvm, "PVM with a configured PVM guest kernel"};
    }
    if (!f.pvm_guest_kernel.empty()) {
      return {Accel::kTcg, "/dev/kvm is kvm_pvm (a software hypervisor) and " + std::string(kPvmGuestKernelEnv) + " (" +
                               f.pvm_guest_kernel + ") is not a readable file: a stock kernel cannot run under it"};
    }
    return {Accel::kTcg,
            "/dev/kvm is kvm_pvm (a software hypervisor) and no PVM guest kernel is configured: "
            "a stock kernel cannot run under it"};
  }
  return {Accel::kTcg, "/dev/kvm exists but neither kvm_intel with vmx, kvm_amd with svm, nor kvm_pvm was found"};
}

}  // namespace

const char* accel_name(Accel accel) {
  switch (accel) {
    case Accel::kKvm: return "kvm";
    case Accel::kTcg: return "tcg";
    case Accel::kNone: return "none";
  }
  return "none";
}

AccelChoice choose_vm_accel(const HostFacts& facts) {
  if (facts.is_macos) return {Accel::kNone, "the vm backend runs on Linux only (on macOS the lima backend is used)"};
  AccelChoice kvm = kvm_verdict(facts);
  if (!facts.qemu_found) {
    std::string why = "qemu-system-x86_64 was not found on PATH (install the qemu-system-x86 package)";
    if (kvm.accel != Accel::kKvm) why += "; " + kvm.why;
    return {Accel::kNone, why};
  }
  return kvm;
}

BackendChoice choose_auto_backend(const HostFacts& facts) {
  if (facts.is_macos) {
    return {BackendKind::kLima,
            facts.limactl_found ? "macOS: Lima runs the sandbox VM"
                                : "macOS: Lima runs the sandbox VM (limactl was not found on PATH: brew install lima)",
            ""};
  }
  AccelChoice accel = choose_vm_accel(facts);
  if (accel.accel == Accel::kKvm) return {BackendKind::kVm, accel.why, ""};
  return {BackendKind::kNs, accel.why, kNsWeakerNote};
}

}  // namespace tnk::host
