#include "backend/vm/host_kvm.h"

#include <cmath>
#include <sstream>

#include "core/files.h"

namespace tnk::vm {

KvmKind kvm_kind(const host::HostFacts& facts) {
  if (!facts.dev_kvm_exists) return KvmKind::kNone;
  if (facts.kvm_intel && facts.cpu_vmx) return KvmKind::kHardwareIntel;
  if (facts.kvm_amd && facts.cpu_svm) return KvmKind::kHardwareAmd;
  if (facts.kvm_pvm) return KvmKind::kPvm;
  return KvmKind::kUnknown;
}

std::string kvm_kind_text(KvmKind kind) {
  switch (kind) {
    case KvmKind::kNone: return "no /dev/kvm";
    case KvmKind::kHardwareIntel: return "hardware KVM (kvm_intel, vmx)";
    case KvmKind::kHardwareAmd: return "hardware KVM (kvm_amd, svm)";
    case KvmKind::kPvm: return "PVM (kvm_pvm, a software hypervisor for nested machines)";
    case KvmKind::kUnknown: return "/dev/kvm of an unrecognised kind (no kvm_intel, kvm_amd or kvm_pvm module)";
  }
  return "unknown";
}

std::string speed_note(const host::AccelChoice& accel) {
  switch (accel.accel) {
    case host::Accel::kKvm: return "guests run at near-native CPU speed; a sandbox boots in well under a second";
    case host::Accel::kTcg:
      return "guests run under QEMU's TCG emulation: 8-25x slower CPU (boot ~1 s with tnk's kernel, "
             "package installs and builds much slower); the vm backend is an explicit opt-in here";
    case host::Accel::kNone: return "the vm backend cannot run here";
  }
  return "";
}

std::optional<uint64_t> host_tsc_khz(const std::filesystem::path& root) {
  auto text = read_file(root / "proc/cpuinfo");
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with("cpu MHz")) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) return std::nullopt;
    try {
      double mhz = std::stod(line.substr(colon + 1));
      if (!(mhz > 0) || mhz > 100000) return std::nullopt;
      return static_cast<uint64_t>(std::llround(mhz * 1000));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace tnk::vm
