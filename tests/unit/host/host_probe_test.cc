#include "host/host_probe.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace tnk::host {
namespace {

namespace fs = std::filesystem;

const char* kNotRw = "/dev/kvm is not readable and writable by this user (add yourself to the kvm group)";
const char* kPvmNoKernel =
    "/dev/kvm is kvm_pvm (a software hypervisor) and no PVM guest kernel is configured: a stock kernel cannot run "
    "under it";
const char* kNoQemu = "qemu-system-x86_64 was not found on PATH (install the qemu-system-x86 package)";

// Host facts from words: "kvm" (/dev/kvm exists), "rw", "intel", "amd", "pvm", "vmx", "svm",
// "pvm-kernel" (configured), "pvm-kernel=PATH" (set, but not a file), "qemu".
HostFacts facts(const std::string& words) {
  static const std::map<std::string, bool HostFacts::*> flags = {
      {"kvm", &HostFacts::dev_kvm_exists},
      {"rw", &HostFacts::dev_kvm_rw},
      {"intel", &HostFacts::kvm_intel},
      {"amd", &HostFacts::kvm_amd},
      {"pvm", &HostFacts::kvm_pvm},
      {"vmx", &HostFacts::cpu_vmx},
      {"svm", &HostFacts::cpu_svm},
      {"qemu", &HostFacts::qemu_found},
      {"pvm-kernel", &HostFacts::pvm_guest_kernel_configured},
  };
  HostFacts f;
  std::istringstream in(words);
  std::string w;
  while (in >> w) {
    if (w.rfind("pvm-kernel=", 0) == 0) {
      f.pvm_guest_kernel = w.substr(11);
    } else if (auto it = flags.find(w); it != flags.end()) {
      f.*(it->second) = true;
    } else {
      ADD_FAILURE() << "unknown word " << w;
    }
  }
  return f;
}

struct Case {
  const char* facts;
  Accel accel;
  std::string why;
  std::string backend;
};

std::vector<Case> cases() {
  const std::string unknown = "/dev/kvm exists but neither kvm_intel with vmx, kvm_amd with svm, nor kvm_pvm was found";
  return {
      {"qemu kvm rw intel vmx", Accel::kKvm, "hardware KVM (kvm_intel, vmx)", "vm"},
      {"qemu kvm rw amd svm", Accel::kKvm, "hardware KVM (kvm_amd, svm)", "vm"},
      {"qemu kvm intel vmx", Accel::kTcg, kNotRw, "ns"},
      {"qemu kvm rw pvm pvm-kernel", Accel::kKvm, "PVM with a configured PVM guest kernel", "vm"},
      {"qemu kvm pvm pvm-kernel", Accel::kTcg, kNotRw, "ns"},
      {"qemu kvm rw pvm", Accel::kTcg, kPvmNoKernel, "ns"},
      {"qemu kvm pvm", Accel::kTcg, kPvmNoKernel, "ns"},  // the group would not help: say why PVM fails
      {"qemu kvm rw pvm pvm-kernel=/nope/vmlinux", Accel::kTcg,
       "/dev/kvm is kvm_pvm (a software hypervisor) and TNK_PVM_GUEST_KERNEL (/nope/vmlinux) is not a readable "
       "file: a stock kernel cannot run under it",
       "ns"},
      {"qemu intel vmx", Accel::kTcg, "no /dev/kvm", "ns"},
      {"qemu kvm rw", Accel::kTcg, unknown, "ns"},
      {"qemu kvm rw intel svm", Accel::kTcg, unknown, "ns"},
      {"kvm rw intel vmx", Accel::kNone, kNoQemu, "ns"},
      {"kvm rw pvm", Accel::kNone, std::string(kNoQemu) + "; " + kPvmNoKernel, "ns"},  // this machine
  };
}

TEST(ChooseVmAccel, EveryBranch) {
  for (const Case& c : cases()) {
    AccelChoice accel = choose_vm_accel(facts(c.facts));
    EXPECT_EQ(accel_name(accel.accel), std::string(accel_name(c.accel))) << c.facts;
    EXPECT_EQ(accel.why, c.why) << c.facts;
  }
}

TEST(ChooseAutoBackend, EveryBranch) {
  for (const Case& c : cases()) {
    BackendChoice choice = choose_auto_backend(facts(c.facts));
    EXPECT_EQ(to_string(choice.backend), c.backend) << c.facts;
    EXPECT_EQ(choice.why, c.why) << c.facts;
    EXPECT_EQ(choice.weaker_note, c.backend == "vm" ? "" : kNsWeakerNote) << c.facts;
  }
}

TEST(ChooseAutoBackend, MacOsIsLima) {
  HostFacts f;
  f.is_macos = true;
  f.limactl_found = true;
  BackendChoice choice = choose_auto_backend(f);
  EXPECT_EQ(choice.backend, BackendKind::kLima);
  EXPECT_EQ(choice.why, "macOS: Lima runs the sandbox VM");
  EXPECT_EQ(choice.weaker_note, "");
  f.limactl_found = false;
  EXPECT_EQ(choose_auto_backend(f).why,
            "macOS: Lima runs the sandbox VM (limactl was not found on PATH: brew install lima)");
  AccelChoice accel = choose_vm_accel(f);
  EXPECT_EQ(accel.accel, Accel::kNone);
  EXPECT_EQ(accel.why, "the vm backend runs on Linux only (on macOS the lima backend is used)");
}

// A fake host root: files under a temp directory that gather_host_facts_at reads instead of /.
class FakeRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tnk-host-probe-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }

  void put(const std::string& rel, const std::string& content, fs::perms mode = fs::perms(0644)) {
    fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
    fs::permissions(p, mode);
  }
  void mkdir(const std::string& rel) { fs::create_directories(root_ / rel); }
  HostFacts gather(bool privileged = false) { return gather_host_facts_at(env_, root_, privileged); }

  fs::path root_;
  Env env_{{{"PATH", "relative/bin:/nonexistent:/usr/bin"}}};
};

TEST_F(FakeRoot, EmptyHostHasNothing) {
  HostFacts f = gather();
  EXPECT_FALSE(f.dev_kvm_exists);
  EXPECT_FALSE(f.dev_kvm_rw);
  EXPECT_FALSE(f.kvm_intel || f.kvm_amd || f.kvm_pvm || f.cpu_vmx || f.cpu_svm);
  EXPECT_FALSE(f.qemu_found);
  EXPECT_FALSE(f.limactl_found);
  EXPECT_FALSE(f.userns_possible);
  EXPECT_EQ(f.userns_note, "this kernel has no user namespaces (/proc/sys/user/max_user_namespaces is missing)");
  EXPECT_FALSE(f.apparmor_restricts_userns.has_value());
  EXPECT_FALSE(f.overlay_possible);
  EXPECT_FALSE(f.is_macos);
  EXPECT_EQ(f.virtiofsd_path, "");
}

TEST_F(FakeRoot, HardwareKvmHost) {
  put("dev/kvm", "", fs::perms(0666));
  mkdir("sys/module/kvm_intel");
  put("proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme vmx sse2\n\nprocessor\t: 1\nflags\t\t: fpu vme vmx\n");
  put("proc/sys/user/max_user_namespaces", "15000\n");
  put("proc/filesystems", "nodev\tsysfs\n\text4\nnodev\toverlay\n");
  put("usr/bin/qemu-system-x86_64", "#!/bin/sh\n", fs::perms(0755));
  put("usr/bin/limactl", "not executable", fs::perms(0644));
  put("usr/libexec/virtiofsd", "", fs::perms(0755));
  put("dev/vhost-vsock", "");
  HostFacts f = gather();
  EXPECT_TRUE(f.dev_kvm_exists);
  EXPECT_TRUE(f.dev_kvm_rw);
  EXPECT_TRUE(f.kvm_intel);
  EXPECT_FALSE(f.kvm_amd || f.kvm_pvm || f.cpu_svm);
  EXPECT_TRUE(f.cpu_vmx);
  EXPECT_TRUE(f.qemu_found);
  EXPECT_EQ(f.qemu_path, (root_ / "usr/bin/qemu-system-x86_64").string());
  EXPECT_FALSE(f.limactl_found);
  EXPECT_TRUE(f.userns_possible);
  EXPECT_EQ(f.userns_note, "");
  EXPECT_TRUE(f.overlay_possible);
  EXPECT_TRUE(f.dev_vhost_vsock_exists);
  EXPECT_EQ(f.virtiofsd_path, (root_ / "usr/libexec/virtiofsd").string());
  EXPECT_EQ(choose_auto_backend(f).backend, BackendKind::kVm);
}

TEST_F(FakeRoot, PvmHostLikeThisMachine) {
  put("dev/kvm", "", fs::perms(0600));
  mkdir("sys/module/kvm");
  mkdir("sys/module/kvm_pvm");
  put("proc/cpuinfo", "flags\t\t: fpu hypervisor sse2\n");
  HostFacts f = gather();
  EXPECT_TRUE(f.kvm_pvm);
  EXPECT_FALSE(f.kvm_intel || f.kvm_amd || f.cpu_vmx || f.cpu_svm);
  EXPECT_FALSE(f.pvm_guest_kernel_configured);

  put("boot/vmlinux-pvm", "kernel");
  env_.set(kPvmGuestKernelEnv, (root_ / "boot/vmlinux-pvm").string());
  f = gather();
  EXPECT_TRUE(f.pvm_guest_kernel_configured);
  env_.set(kPvmGuestKernelEnv, (root_ / "boot/missing").string());
  f = gather();
  EXPECT_FALSE(f.pvm_guest_kernel_configured);
  EXPECT_EQ(f.pvm_guest_kernel, (root_ / "boot/missing").string());
  env_.set(kPvmGuestKernelEnv, (root_ / "boot").string());  // a directory is not a kernel
  EXPECT_FALSE(gather().pvm_guest_kernel_configured);
}

TEST_F(FakeRoot, UserNamespaceKnobs) {
  put("proc/sys/user/max_user_namespaces", "0\n");
  EXPECT_FALSE(gather(true).userns_possible);
  EXPECT_EQ(gather(true).userns_note, "user namespaces are disabled (user.max_user_namespaces = 0)");

  put("proc/sys/user/max_user_namespaces", "100\n");
  put("proc/sys/kernel/unprivileged_userns_clone", "0\n");
  EXPECT_FALSE(gather().userns_possible);
  EXPECT_EQ(gather().userns_note, "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)");
  EXPECT_TRUE(gather(true).userns_possible);  // root is not affected by the Debian knob

  put("proc/sys/kernel/unprivileged_userns_clone", "1\n");
  put("proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1\n");
  HostFacts f = gather();
  EXPECT_FALSE(f.userns_possible);
  EXPECT_EQ(f.apparmor_restricts_userns, true);
  EXPECT_EQ(f.userns_note,
            "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)");
  EXPECT_TRUE(gather(true).userns_possible);

  put("proc/sys/kernel/apparmor_restrict_unprivileged_userns", "0\n");
  f = gather();
  EXPECT_TRUE(f.userns_possible);
  EXPECT_EQ(f.apparmor_restricts_userns, false);
}

TEST_F(FakeRoot, RelativePathEntriesAreNotSearched) {
  put("usr/local/bin/limactl", "", fs::perms(0755));
  env_.set("PATH", "usr/local/bin:");  // relative and empty entries: never the current directory
  EXPECT_FALSE(gather().limactl_found);
  env_.set("PATH", "/usr/local/bin/");
  HostFacts f = gather();
  EXPECT_TRUE(f.limactl_found);
  EXPECT_EQ(f.limactl_path, (root_ / "usr/local/bin/limactl").string());
}

// Runs on the real host. On a kvm_pvm machine (like tnk's development VM) it must see PVM and no
// VMX/SVM; elsewhere it only has to agree with the files it read.
TEST(GatherHostFacts, ThisMachine) {
  HostFacts f = gather_host_facts(Env::from_process());
  EXPECT_EQ(f.dev_kvm_exists, fs::exists("/dev/kvm"));
  EXPECT_EQ(f.kvm_pvm, fs::exists("/sys/module/kvm_pvm"));
  EXPECT_EQ(f.kvm_intel, fs::exists("/sys/module/kvm_intel"));
  EXPECT_EQ(f.kvm_amd, fs::exists("/sys/module/kvm_amd"));
  EXPECT_FALSE(f.is_macos);
  if (f.qemu_found) {
    EXPECT_EQ(::access(f.qemu_path.c_str(), X_OK), 0);
  }
  if (fs::exists("/sys/module/kvm_pvm")) {
    EXPECT_TRUE(f.kvm_pvm);
    EXPECT_FALSE(f.cpu_vmx);
    EXPECT_FALSE(f.cpu_svm);
    if (!f.pvm_guest_kernel_configured) {
      EXPECT_EQ(choose_auto_backend(f).backend, BackendKind::kNs);
    }
  }
}

}  // namespace
}  // namespace tnk::host
