// What this host can run, detected and never assumed: KVM flavour, QEMU, user namespaces,
// overlayfs, Lima. gather_host_facts() only reads files; the choices below are pure functions of
// the facts, so every branch is unit-tested and `tnk doctor` can print the same reasons.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/env.h"
#include "naming/backend_kind.h"

namespace tnk::host {

// The environment variable naming a PVM-enabled guest kernel (an uncompressed vmlinux). Under a
// kvm_pvm host a stock kernel cannot run, so KVM is used only when this names an existing,
// readable regular file.
inline constexpr const char* kPvmGuestKernelEnv = "TNK_PVM_GUEST_KERNEL";

struct HostFacts {
  bool dev_kvm_exists = false;
  bool dev_kvm_rw = false;  // readable and writable by this process's effective ids
  bool kvm_intel = false;   // /sys/module/kvm_intel
  bool kvm_amd = false;     // /sys/module/kvm_amd
  bool kvm_pvm = false;     // /sys/module/kvm_pvm: a software hypervisor, needs a PVM guest kernel
  bool cpu_vmx = false;     // /proc/cpuinfo flags
  bool cpu_svm = false;
  bool pvm_guest_kernel_configured = false;
  std::string pvm_guest_kernel;  // $TNK_PVM_GUEST_KERNEL as given, even when it names no file
  bool qemu_found = false;
  std::string qemu_path;  // qemu-system-x86_64 found on $PATH
  // Not known to be disabled: user.max_user_namespaces > 0 and, for a non-root user,
  // kernel.unprivileged_userns_clone != 0 (Debian knob) and AppArmor's restriction off.
  // Seccomp filters of an outer container can still refuse; the ns backend finds out by trying.
  bool userns_possible = false;
  std::string userns_note;                        // why not, when !userns_possible
  std::optional<bool> apparmor_restricts_userns;  // kernel.apparmor_restrict_unprivileged_userns; nullopt: absent
  bool overlay_possible = false;                  // "overlay" in /proc/filesystems (a not-yet-loaded module is missed)
  bool is_macos = false;                          // uname sysname "Darwin"; always false on Linux
  bool limactl_found = false;
  std::string limactl_path;
  bool dev_vhost_vsock_exists = false;  // vsock needs it; reported by doctor
  std::string virtiofsd_path;           // empty when not found
};

// Reads the live host: /dev/kvm, /sys/module, /proc, $PATH from `env`, uname.
HostFacts gather_host_facts(const Env& env);

// The same under another root directory (tests build a fake /dev, /sys and /proc there).
// `privileged` stands for "effective uid 0" in the user-namespace rules. Only absolute $PATH
// entries are searched (an empty or relative entry would search the current directory).
HostFacts gather_host_facts_at(const Env& env, const std::filesystem::path& root, bool privileged);

enum class Accel { kKvm, kTcg, kNone };
const char* accel_name(Accel accel);  // "kvm", "tcg", "none"

struct AccelChoice {
  Accel accel = Accel::kNone;
  std::string why;  // one line, printed by doctor and in the auto-backend note
};

// KVM only when a stock or configured guest kernel can really run under it: hardware KVM
// (kvm_intel with vmx or kvm_amd with svm) or kvm_pvm with a PVM guest kernel, and /dev/kvm
// read-write. TCG otherwise; kNone without QEMU (or on macOS, where the vm backend does not run).
AccelChoice choose_vm_accel(const HostFacts& facts);

// What auto's fallback gives up, printed once when a sandbox starts on ns for that reason.
inline constexpr const char* kNsWeakerNote =
    "using the ns backend: sandboxes share the host kernel (vm would give each its own, but needs usable KVM; "
    "see `tnk doctor`)";

struct BackendChoice {
  BackendKind backend = BackendKind::kNs;
  std::string why;
  std::string weaker_note;  // one line naming what is weaker than vm; empty for vm and lima
};

// What `backend = "auto"` means here: lima on macOS, vm with KVM, otherwise ns (TCG is an
// explicit opt-in: 8-25x slower guest CPU).
BackendChoice choose_auto_backend(const HostFacts& facts);

}  // namespace tnk::host
