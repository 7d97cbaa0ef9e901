#include "backend/doctor_checks.h"

namespace tnk::backend {

using doctor::Outcome;
using doctor::Status;

// None of these is required yet: no backend is built into this tnk, so a host that lacks what
// one needs is reported, not failed.
void add_doctor_checks(doctor::Registry& registry, const HostFacts& facts) {
  registry.add({"backend_auto", "backend (auto)", false, [facts]() -> Outcome {
                  auto choice = choose_auto_backend(facts);
                  // The weaker-note is printed when a sandbox starts; here the reason is enough.
                  return {Status::kInfo, choice.backend + ": " + choice.why, ""};
                }});
  registry.add({"vm_accel", "vm backend acceleration", false, [facts]() -> Outcome {
                  auto accel = choose_vm_accel(facts);
                  Status status = accel.accel == Accel::kKvm ? Status::kOk : Status::kInfo;
                  std::string fix;
                  if (accel.accel == Accel::kNone) fix = "sudo apt-get install qemu-system-x86";
                  return {status, std::string(accel_name(accel.accel)) + ": " + accel.why, fix};
                }});
  registry.add({"ns_userns", "ns backend: user namespaces", false, [facts]() -> Outcome {
                  if (facts.userns_possible) return {Status::kOk, "available", ""};
                  std::string fix;
                  if (facts.apparmor_restricts_userns.value_or(false)) {
                    fix =
                        "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04 restricts "
                        "unprivileged user namespaces)";
                  }
                  return {Status::kWarn, facts.userns_note, fix};
                }});
  registry.add({"ns_overlay", "ns backend: overlayfs", false, [facts]() -> Outcome {
                  if (facts.overlay_possible) return {Status::kOk, "overlay is in /proc/filesystems", ""};
                  return {Status::kWarn, "overlay is not in /proc/filesystems", "sudo modprobe overlay"};
                }});
}

}  // namespace tnk::backend
