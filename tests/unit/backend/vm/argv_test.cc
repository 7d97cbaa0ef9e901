// Golden tests of the vm backend's plans: QEMU's and virtiofsd's command lines, and what /dev/kvm is.
// Nothing here starts a process (vm_boot_smoke_test.cc boots a real guest).
#include <gtest/gtest.h>

#include <fstream>

#include "backend/vm/doctor_checks.h"
#include "backend/vm/host_kvm.h"
#include "backend/vm/qemu_argv.h"
#include "backend/vm/virtiofsd_argv.h"
#include "core/files.h"
#include "temp_dir.h"

namespace tnk::vm {
namespace {

QemuConfig sample_config() {
  QemuConfig c;
  c.cpus = 2;
  c.memory_mib = 1024;
  c.kernel = "/cache/kernels/linux-6.1.192-0123456789ab/vmlinux";
  c.root_disk = "/state/sb/disk.qcow2";
  c.boot_disk = "/state/sb/base.img";
  c.qmp_socket = "/state/sb/qmp.sock";
  c.agent_socket = "/state/sb/agent.sock";
  c.virtiofs_socket = "/state/sb/virtiofsd.sock";
  c.serial_socket = "/state/sb/serial.sock";
  c.agent.token = "tok123";
  c.agent.mount = "/workspace";
  c.agent.hostname = "sandbox";
  c.agent.ip = "10.0.2.15/24";
  c.name = "tnk-sb";
  return c;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : "\n") + a;
  return out;
}

TEST(QemuArgv, GoldenTcgWithNetwork) {
  QemuConfig c = sample_config();
  c.tsc_khz = 2596140;
  c.network = true;
  c.host_forwards.push_back({"127.0.0.2", 1023, "10.0.2.15", 1023});
  auto argv = qemu_argv(c);
  ASSERT_TRUE(argv.ok()) << argv.error().message;
  EXPECT_EQ(joined(*argv),
            "qemu-system-x86_64\n-name\ntnk-sb\n"
            "-M\nmicrovm,x-option-roms=off,acpi=off,memory-backend=mem\n-global\nvirtio-mmio.force-legacy=false\n"
            "-accel\ntcg,tb-size=64\n-cpu\nmax,-erms,-fsrm\n"
            "-smp\n2\n-m\n1024\n-object\nmemory-backend-memfd,id=mem,size=1024M,share=on\n"
            "-nodefaults\n-no-user-config\n-display\nnone\n-no-reboot\n"
            "-sandbox\non,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny\n"
            "-kernel\n/cache/kernels/linux-6.1.192-0123456789ab/vmlinux\n"
            "-append\nquiet ro console=ttyS0 reboot=t panic=-1 root=/dev/vdb rootfstype=ext4 tsc_early_khz=2596140 "
            "tsc=reliable no_timer_check pty.legacy_count=0 init=/sbin/tnk-agent tnk.token=tok123 tnk.port=tnk.agent "
            "tnk.host=10.0.2.2 tnk.mount=/workspace tnk.hostname=sandbox tnk.ip=10.0.2.15/24 tnk.root=/dev/vda\n"
            "-chardev\nsocket,id=serial0,path=/state/sb/serial.sock\n-serial\nchardev:serial0\n"
            "-chardev\nsocket,id=qmp,path=/state/sb/qmp.sock,server=on,wait=off\n-mon\nchardev=qmp,mode=control\n"
            "-device\nvirtio-serial-device\n"
            "-chardev\nsocket,id=agent,path=/state/sb/agent.sock,server=on,wait=off\n"
            "-device\nvirtserialport,chardev=agent,name=tnk.agent\n"
            "-drive\nid=root,file=/state/sb/disk.qcow2,format=qcow2,if=none,cache=writeback,discard=unmap,"
            "detect-zeroes=unmap,werror=enospc\n-device\nvirtio-blk-device,drive=root\n"
            "-drive\nid=boot,file=/state/sb/base.img,format=raw,if=none,readonly=on\n"
            "-device\nvirtio-blk-device,drive=boot\n"
            "-chardev\nsocket,id=vfs,path=/state/sb/virtiofsd.sock\n"
            "-device\nvhost-user-fs-device,chardev=vfs,tag=workspace,event_idx=off\n"
            "-netdev\nuser,id=net0,restrict=off,hostfwd=tcp:127.0.0.2:1023-10.0.2.15:1023\n"
            "-device\nvirtio-net-device,netdev=net0");
}

TEST(QemuArgv, KvmUsesTheHostCpuAndNoTscHint) {
  QemuConfig c = sample_config();
  c.kvm = true;
  c.tsc_khz = 2596140;  // ignored: kvm-clock
  auto argv = qemu_argv(c);
  ASSERT_TRUE(argv.ok());
  std::string all = joined(*argv);
  EXPECT_NE(all.find("-accel\nkvm\n-cpu\nhost,-arch-capabilities\n"), std::string::npos);
  EXPECT_EQ(all.find("tcg"), std::string::npos);
  EXPECT_EQ(all.find("tsc_early_khz"), std::string::npos);
  for (const char* tcg_only : {"tsc=reliable", "no_timer_check", "noapictimer", "tb-size", "erms"}) {
    EXPECT_EQ(all.find(tcg_only), std::string::npos) << tcg_only;
  }
  EXPECT_NE(all.find(" pty.legacy_count=0 "), std::string::npos);
}

// A lone TCG CPU ticks from the PIT (its APIC timer's calibration cost a quarter of the boot); with more
// CPUs the APIC timers stay.
TEST(QemuArgv, OneTcgCpuSkipsTheApicTimer) {
  QemuConfig c = sample_config();
  c.cpus = 1;
  auto one = kernel_cmdline(c);
  ASSERT_TRUE(one.ok());
  EXPECT_NE(one->find(" no_timer_check noapictimer pty.legacy_count=0 "), std::string::npos) << *one;
  c.cpus = 2;
  auto two = kernel_cmdline(c);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->find("noapictimer"), std::string::npos);
  c.cpus = 1;
  c.kvm = true;
  auto kvm = kernel_cmdline(c);
  ASSERT_TRUE(kvm.ok());
  EXPECT_EQ(kvm->find("noapictimer"), std::string::npos);
}

// restrict=off is named: QEMU's user network connects out for the guest, from QEMU's own network
// namespace (processes.h), where only the supervisor's relays listen.
TEST(QemuArgv, TheUserNetworkOnlyWhenAskedAndNamedUnrestricted) {
  QemuConfig c = sample_config();
  auto without = qemu_argv(c);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(joined(*without).find("-netdev"), std::string::npos);  // no network at all by default
  c.network = true;
  auto with = qemu_argv(c);
  ASSERT_TRUE(with.ok());
  EXPECT_NE(joined(*with).find("user,id=net0,restrict=off\n"), std::string::npos);
}

TEST(QemuArgv, EscapesCommasInPaths) {
  QemuConfig c = sample_config();
  c.serial_socket = "/state/a,b/serial.sock";
  auto argv = qemu_argv(c);
  ASSERT_TRUE(argv.ok());
  EXPECT_NE(joined(*argv).find("socket,id=serial0,path=/state/a,,b/serial.sock\n"), std::string::npos);
  EXPECT_EQ(qemu_escape("a,b,,c"), "a,,b,,,,c");
}

// Security review M5: a file chardev would let guest root fill the host's disk through /dev/ttyS0. QEMU
// connects to the supervisor's socket instead (a client: no server=on, unlike QMP's and the agent's).
TEST(QemuArgv, TheConsoleGoesToTheSupervisorsSocketNeverToAFile) {
  auto argv = qemu_argv(sample_config());
  ASSERT_TRUE(argv.ok());
  std::string text = joined(*argv);
  EXPECT_EQ(text.find("file,"), std::string::npos);
  EXPECT_NE(text.find("-chardev\nsocket,id=serial0,path=/state/sb/serial.sock\n-serial\nchardev:serial0\n"),
            std::string::npos);
  EXPECT_NE(text.find("socket,id=qmp,path=/state/sb/qmp.sock,server=on"), std::string::npos);
  QemuConfig c = sample_config();
  c.serial_socket.clear();
  EXPECT_EQ(qemu_argv(c).error().kind, ErrorKind::kUsage);
}

TEST(QemuArgv, RefusesWhatTheCommandLinesCannotCarry) {
  QemuConfig c = sample_config();
  c.agent.mount = "/work space";
  EXPECT_EQ(qemu_argv(c).error().kind, ErrorKind::kUsage);
  c = sample_config();
  c.extra_kernel_args = {"init=\"x\""};
  EXPECT_FALSE(qemu_argv(c).ok());
  c = sample_config();
  c.host_forwards.push_back({"127.0.0.2", 1023, "10.0.2.15", 1023});  // a forward without the network
  EXPECT_FALSE(qemu_argv(c).ok());
  c.network = true;
  EXPECT_TRUE(qemu_argv(c).ok());
  c.host_forwards = {{"127.0.0.2", 1023, "10.0.2.15,x", 1023}};
  EXPECT_FALSE(qemu_argv(c).ok());
  c.host_forwards = {{"127.0.0.2:1-", 1023, "10.0.2.15", 1023}};
  EXPECT_FALSE(qemu_argv(c).ok());
  c = sample_config();
  c.cpus = 0;
  EXPECT_FALSE(qemu_argv(c).ok());
  c = sample_config();
  c.memory_mib = 16;
  EXPECT_FALSE(qemu_argv(c).ok());
}

TEST(QemuArgv, VerboseConsoleAndExtraArgumentsForTests) {
  QemuConfig c = sample_config();
  c.quiet = false;
  c.init = "/bin/true";
  c.agent = {};
  c.agent.token = "t";
  c.extra_kernel_args = {"loglevel=7"};
  auto line = kernel_cmdline(c);
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(*line,
            "ro console=ttyS0 reboot=t panic=-1 root=/dev/vdb rootfstype=ext4 tsc=reliable no_timer_check "
            "pty.legacy_count=0 init=/bin/true tnk.token=t "
            "tnk.port=tnk.agent tnk.host=10.0.2.2 tnk.root=/dev/vda loglevel=7");
}

TEST(VirtiofsdPlan, GoldenArgvAndIdMaps) {
  VirtiofsdConfig c;
  c.socket = "/state/sb/virtiofsd.sock";
  c.source = "/home/me/projects/app";
  c.owner_uid = 1001;
  c.owner_gid = 1002;
  auto plan = virtiofsd_plan(c);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(joined(plan->argv),
            "/usr/lib/qemu/virtiofsd\n--socket-path=/state/sb/virtiofsd.sock\n-o\nsource=/home/me/projects/app\n"
            "-o\ncache=auto\n-o\nsandbox=namespace\n--rlimit-nofile=0");
  // Issue 32, R3-H2: only the agent's ids, as the owner's, and virtiofsd runs as them; no xattrs (so no
  // security.capability), whatever the guest asks.
  EXPECT_EQ(idmap::proc_map_text(plan->uid_map), "1000 1001 1\n");
  EXPECT_EQ(idmap::proc_map_text(plan->gid_map), "1000 1002 1\n");
  EXPECT_EQ(plan->run_as, 1000u);
  EXPECT_EQ(joined(plan->argv).find("xattr"), std::string::npos);
  EXPECT_EQ(plan->nofile_limit, 1'000'000u);
}

// The supervisor makes the socket itself (virtiofsd, nobody on the host, could not create it in the
// state directory) and hands it over as fd 3.
TEST(VirtiofsdPlan, AnInheritedSocketReplacesTheSocketPath) {
  VirtiofsdConfig c;
  c.socket = "/state/sb/virtiofsd.sock";
  c.source = "/run/tnk-workspace";
  c.owner_uid = 1001;
  c.listen_fd = 3;
  auto plan = virtiofsd_plan(c);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->argv.at(1), "--fd=3");
  EXPECT_EQ(joined(plan->argv).find("--socket-path"), std::string::npos);
}

TEST(VirtiofsdPlan, Refusals) {
  VirtiofsdConfig c;
  c.socket = "relative.sock";
  c.source = "/p";
  EXPECT_EQ(virtiofsd_plan(c).error().kind, ErrorKind::kUsage);
  c.socket = "/s.sock";
  c.cache = "sometimes";
  EXPECT_FALSE(virtiofsd_plan(c).ok());
  c.cache = "always";
  c.source = "/a,b";
  EXPECT_FALSE(virtiofsd_plan(c).ok());
  c.source = "/p";
  c.owner_uid = 0;  // virtiofsd would act as host root
  EXPECT_EQ(virtiofsd_plan(c).error().kind, ErrorKind::kUsage);
  c.owner_uid = 1001;
  c.guest_agent_id = 0;  // virtiofsd would be its namespace's root, which takes on any guest id
  EXPECT_EQ(virtiofsd_plan(c).error().kind, ErrorKind::kUsage);
  c.guest_agent_id = 1000;
  EXPECT_TRUE(virtiofsd_plan(c).ok());
}

host::HostFacts facts_with(bool kvm, bool intel, bool vmx, bool amd, bool svm, bool pvm) {
  host::HostFacts f;
  f.dev_kvm_exists = kvm;
  f.kvm_intel = intel;
  f.cpu_vmx = vmx;
  f.kvm_amd = amd;
  f.cpu_svm = svm;
  f.kvm_pvm = pvm;
  return f;
}

TEST(HostKvm, KindFromModulesAndFlags) {
  EXPECT_EQ(kvm_kind(facts_with(false, true, true, false, false, false)), KvmKind::kNone);
  EXPECT_EQ(kvm_kind(facts_with(true, true, true, false, false, false)), KvmKind::kHardwareIntel);
  EXPECT_EQ(kvm_kind(facts_with(true, false, false, true, true, false)), KvmKind::kHardwareAmd);
  EXPECT_EQ(kvm_kind(facts_with(true, false, false, false, false, true)), KvmKind::kPvm);      // this machine
  EXPECT_EQ(kvm_kind(facts_with(true, true, false, false, false, false)), KvmKind::kUnknown);  // module, no vmx
  EXPECT_NE(kvm_kind_text(KvmKind::kPvm).find("kvm_pvm"), std::string::npos);
  EXPECT_NE(speed_note({host::Accel::kTcg, ""}).find("8-25x slower"), std::string::npos);
}

TEST(HostKvm, TscFromCpuinfo) {
  testing_support::TempDir dir;
  ASSERT_TRUE(make_dirs(dir.path() / "proc").ok());
  std::ofstream(dir.path() / "proc/cpuinfo") << "processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.140\n";
  EXPECT_EQ(host_tsc_khz(dir.path()), 2596140u);
  std::ofstream(dir.path() / "proc/cpuinfo") << "processor\t: 0\n";
  EXPECT_EQ(host_tsc_khz(dir.path()), std::nullopt);
  EXPECT_EQ(host_tsc_khz(dir.path() / "missing"), std::nullopt);
}

TEST(VmDoctor, VersionsOfQemuAndVirtiofsd) {
  EXPECT_EQ(parse_version("QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\nCopyright"), "7.2.22");
  EXPECT_EQ(parse_version("virtiofsd version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)"), "7.2.22");
  EXPECT_EQ(parse_version("virtiofsd version v1.10.1"), "1.10.1");  // the Rust one, on newer hosts
  EXPECT_EQ(parse_version("nothing here"), std::nullopt);
  EXPECT_TRUE(qemu_version_ok("7.2.22"));
  EXPECT_TRUE(qemu_version_ok("8.0"));
  EXPECT_FALSE(qemu_version_ok("7.1.0"));
  EXPECT_FALSE(qemu_version_ok("garbage"));
}

}  // namespace
}  // namespace tnk::vm
