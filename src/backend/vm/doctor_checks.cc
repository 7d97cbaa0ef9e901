#include "backend/vm/doctor_checks.h"

#include <grp.h>

#include "backend/vm/boot/boot_files.h"
#include "backend/vm/boot/disk.h"
#include "backend/vm/boot/kernel.h"
#include "backend/vm/host_kvm.h"
#include "core/subprocess.h"
#include "core/user_name.h"
#include "image/apt_sources.h"
#include "image/recipe.h"

namespace tnk::vm {
namespace {

using doctor::Outcome;

std::optional<std::string> version_of(const std::string& program) {
  ProcessOptions options;
  options.capture_stdout = true;
  options.capture_stderr = true;
  options.timeout = std::chrono::seconds(10);
  auto run = run_process({program, "--version"}, options);
  if (!run || run->exit_code != 0) return std::nullopt;
  return parse_version(run->out + run->err);
}

Outcome kvm_outcome(const host::HostFacts& facts) {
  KvmKind kind = kvm_kind(facts);
  auto accel = host::choose_vm_accel(facts);
  std::string access;
  if (facts.dev_kvm_exists) access = facts.dev_kvm_rw ? ", read-write for this user" : ", not usable by this user";
  std::string summary = kvm_kind_text(kind) + access + ": " + speed_note(accel);
  std::string fix;
  if (kind == KvmKind::kPvm) {
    fix = std::string("set ") + host::kPvmGuestKernelEnv + " to a PVM guest kernel to run at KVM speed";
  }
  return {accel.accel == host::Accel::kKvm ? doctor::Status::kOk : doctor::Status::kInfo, summary, fix};
}

// Whether the invoking user may open /dev/kvm itself (a vm sandbox run as that user needs it).
Outcome kvm_access_outcome(const host::HostFacts& facts) {
  std::string user = effective_user_name();
  if (!facts.dev_kvm_exists) return {doctor::Status::kInfo, "no /dev/kvm on this host: nothing to give " + user, ""};
  if (facts.dev_kvm_rw) return {doctor::Status::kOk, "/dev/kvm is readable and writable by " + user, ""};
  if (::getgrnam("kvm") == nullptr) {
    return {doctor::Status::kWarn, "/dev/kvm is not readable and writable by " + user + ", and there is no group kvm",
            "run `sudo groupadd --system kvm && sudo chgrp kvm /dev/kvm && sudo chmod 660 /dev/kvm && "
            "sudo usermod -aG kvm " +
                user + "`, then log in again"};
  }
  return {doctor::Status::kWarn, "/dev/kvm is not readable and writable by " + user,
          "run `sudo tnk setup --user " + user + "` (it adds " + user + " to the group kvm), then log in again"};
}

Outcome qemu_outcome(const host::HostFacts& facts) {
  if (!facts.qemu_found) {
    return {doctor::Status::kInfo, "qemu-system-x86_64 is not installed (only the vm backend needs it)",
            "run `sudo apt-get install qemu-system-x86 qemu-utils`"};
  }
  auto version = version_of(facts.qemu_path);
  if (!version)
    return {doctor::Status::kWarn, facts.qemu_path + " --version did not answer",
            "run `sudo apt-get install --reinstall qemu-system-x86`"};
  if (!qemu_version_ok(*version)) {
    return {doctor::Status::kWarn, facts.qemu_path + " is QEMU " + *version + "; the vm backend needs 7.2 or newer",
            "run `sudo apt-get install --only-upgrade qemu-system-x86`"};
  }
  return {doctor::Status::kOk, facts.qemu_path + " (QEMU " + *version + ")", ""};
}

Outcome virtiofsd_outcome(const host::HostFacts& facts) {
  if (facts.virtiofsd_path.empty()) {
    return {doctor::Status::kInfo, "virtiofsd is not installed (the vm backend shares the project with it)",
            "`sudo apt-get install qemu-system-x86` (Debian 12 ships virtiofsd in qemu-system-common)"};
  }
  auto version = version_of(facts.virtiofsd_path);
  return {doctor::Status::kOk, facts.virtiofsd_path + (version ? " (version " + *version + ")" : ""), ""};
}

Outcome kernel_outcome(const Paths& paths, const std::filesystem::path& self_exe) {
  auto recipe = vm::boot::shipped_kernel_recipe(paths, self_exe);
  if (!recipe)
    return {doctor::Status::kInfo, "cannot build a guest kernel here: " + recipe.error().message, recipe.error().hint};
  std::string id = vm::boot::kernel_id(*recipe);
  if (auto found = vm::boot::find_kernel(paths, id)) {
    return {doctor::Status::kOk, id + " is built (" + std::to_string(found->size_bytes / 1'000'000) + " MB vmlinux)",
            ""};
  }
  return {doctor::Status::kInfo, id + " is not built yet (a few minutes, once per machine)", "tnk image build --vm"};
}

Outcome disk_outcome(const Paths& paths, const std::filesystem::path& self_exe) {
  auto sources = image::read_apt_sources();
  auto recipe = sources ? image::default_recipe(*sources) : Result<image::Recipe>(sources.error());
  if (!recipe) return {doctor::Status::kInfo, "no current image: " + recipe.error().message, recipe.error().hint};
  std::string image_id = image::image_id(*recipe);
  auto agent = vm::boot::agent_binary(self_exe);
  auto sha = vm::boot::agent_sha256(paths, agent);
  if (!sha) {
    return {doctor::Status::kInfo, "tnk-agent is not installed at " + agent.string() + ", so no base disk can be built",
            "cmake --build build --target tnk-agent"};
  }
  std::string id = vm::boot::disk_id(image_id, *sha);
  if (auto found = vm::boot::find_disk(paths, id)) {
    return {doctor::Status::kOk,
            id + " is built (" + std::to_string(found->allocated_bytes / 1'000'000) + " MB allocated of " +
                std::to_string(found->size_bytes / 1'000'000) + " MB)",
            ""};
  }
  return {doctor::Status::kInfo, id + " is not built yet (a second, after image " + image_id + ")",
          "tnk image build --vm"};
}

}  // namespace

// "version", blanks, an optional "v", then digits.digits[.digits]. Written out: std::regex trips GCC 12's
// -Wmaybe-uninitialized in the sanitized -O2 build.
std::optional<std::string> parse_version(const std::string& output) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  for (size_t at = output.find("version"); at != std::string::npos; at = output.find("version", at + 1)) {
    size_t i = at + 7, blanks = i;
    while (i < output.size() && (output[i] == ' ' || output[i] == '\t')) ++i;
    if (i == blanks) continue;
    if (i < output.size() && output[i] == 'v') ++i;
    size_t start = i;
    int parts = 0;
    while (parts < 3 && i < output.size() && digit(output[i])) {
      while (i < output.size() && digit(output[i])) ++i;
      ++parts;
      if (parts < 3 && i + 1 < output.size() && output[i] == '.' && digit(output[i + 1])) {
        ++i;
      } else {
        break;
      }
    }
    if (parts >= 2) return output.substr(start, i - start);
  }
  return std::nullopt;
}

bool qemu_version_ok(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) return false;
  return major > 7 || (major == 7 && minor >= 2);
}

void add_vm_doctor_checks(doctor::Registry& registry, const host::HostFacts& facts, const Paths& paths,
                          const std::filesystem::path& self_exe) {
  registry.add({"vm_kvm", "vm backend: /dev/kvm", false, [facts] { return kvm_outcome(facts); }});
  registry.add({"vm_qemu", "vm backend: QEMU", false, [facts] { return qemu_outcome(facts); }});
  registry.add(
      {"vm_kvm_access", "vm backend: /dev/kvm for this user", false, [facts] { return kvm_access_outcome(facts); }});
  registry.add({"vm_virtiofsd", "vm backend: virtiofsd", false, [facts] { return virtiofsd_outcome(facts); }});
  registry.add({"vm_virtiofsd_userns", "vm backend: virtiofsd in a user namespace", false, []() -> Outcome {
                  return {doctor::Status::kInfo,
                          "not probed: virtiofsd runs as the root of a user namespace (rootless: mapped onto "
                          "your subordinate ids); the ns checks above cover user namespaces",
                          ""};
                }});
  registry.add({"vm_vsock", "vm backend: vhost-vsock", false, [facts]() -> Outcome {
                  if (facts.dev_vhost_vsock_exists) return {doctor::Status::kOk, "/dev/vhost-vsock is present", ""};
                  return {
                      doctor::Status::kInfo,
                      "no /dev/vhost-vsock (vhost_vsock is not loaded, or not in this kernel): the agent is reached "
                      "over virtio-serial instead",
                      ""};
                }});
  registry.add(
      {"vm_kernel", "vm backend: guest kernel", false, [paths, self_exe] { return kernel_outcome(paths, self_exe); }});
  registry.add(
      {"vm_disk", "vm backend: base disk", false, [paths, self_exe] { return disk_outcome(paths, self_exe); }});
}

}  // namespace tnk::vm
