// What /dev/kvm is on this host and what it means for the vm backend's speed, on top of the facts
// backend/host_probe.h gathers (modules, CPU flags, /dev/kvm access), plus the TSC frequency a TCG
// guest needs on its command line (tsc_early_khz=) to boot reliably.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "host/host_probe.h"

namespace tnk::vm {

enum class KvmKind {
  kNone,           // no /dev/kvm
  kHardwareIntel,  // kvm_intel with vmx: any guest kernel at native speed
  kHardwareAmd,    // kvm_amd with svm
  kPvm,            // kvm_pvm: a software hypervisor; only a PVM guest kernel runs under it
  kUnknown,        // /dev/kvm without a module tnk recognises
};

KvmKind kvm_kind(const host::HostFacts& facts);
// "hardware KVM (kvm_intel, vmx)", "PVM (kvm_pvm, software hypervisor)", "none", ...
std::string kvm_kind_text(KvmKind kind);
// One line: what the accelerator chosen for this host means for a guest's speed.
std::string speed_note(const host::AccelChoice& accel);

// The host's TSC frequency in kHz, which TCG guests see: from /proc/cpuinfo's "cpu MHz" (the
// first CPU), under `root` for tests. nullopt when it cannot be read.
std::optional<uint64_t> host_tsc_khz(const std::filesystem::path& root = "/");

}  // namespace tnk::vm
