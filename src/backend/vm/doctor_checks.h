// The doctor checks of the vm backend: what /dev/kvm is and what it means for speed, whether this user
// may open it, QEMU and
// virtiofsd with their versions, vhost-vsock, and whether the guest kernel and base disk are built.
// None is required: a host where the vm backend is slow or missing still passes doctor.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/paths.h"
#include "doctor/doctor.h"
#include "host/host_probe.h"

namespace tnk::vm {

void add_vm_doctor_checks(doctor::Registry& registry, const host::HostFacts& facts, const Paths& paths,
                          const std::filesystem::path& self_exe);

// "QEMU emulator version 7.2.22 (Debian ...)" -> "7.2.22"; "virtiofsd version 7.2.22 ..." too.
std::optional<std::string> parse_version(const std::string& output);
// Whether "major.minor[.patch]" is at least 7.2 (microvm with vhost-user-fs and force-legacy=false).
bool qemu_version_ok(const std::string& version);

}  // namespace tnk::vm
