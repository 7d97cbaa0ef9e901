// The vm plan against golden files (tests/unit/backend/vm/golden/<case>.txt): QEMU's and virtiofsd's
// whole command lines for each network policy, sizing and accelerator, as the supervisor's config
// gives them. Nothing starts here. After an intended change:
// TNK_UPDATE_GOLDEN=1 ./tnk_unit_tests --gtest_filter='VmPlan*', then review the diff of the golden files.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "backend/vm/plan.h"
#include "golden.h"

namespace tnk::vm {
namespace {

constexpr uint64_t kMiB = 1024ull * 1024;
constexpr const char* kToken = "0123456789abcdef0123456789abcdef";

// What `tnk sandbox start` hands a vm supervisor for a project under the default policy.
supervisor::SupervisorConfig base_config() {
  supervisor::SupervisorConfig c;
  c.id = "tnk-demo";
  c.backend = BackendKind::kVm;
  c.state_dir = "/root/.local/state/tnk/sandboxes/tnk-demo";
  c.image_root = "/root/.cache/tnk/images/0123456789ab/rootfs";
  c.project_dir = "/home/ann/code/demo";
  c.mount_point = "/workspace";
  c.inference_host = "127.0.0.1";
  c.inference_port = 8080;
  c.network = NetworkPolicy::kInference;
  c.vm_kernel = "/root/.cache/tnk/kernels/linux-6.1.192-0123456789ab/vmlinux";
  c.vm_base_disk = "/root/.cache/tnk/disks/0123456789ab/base.img";
  return c;
}

VmHostFacts base_facts() {
  VmHostFacts f;
  f.tsc_khz = 2596140;
  f.project_uid = 1001;
  f.project_gid = 1002;
  return f;
}

VmPlan plan_of(const supervisor::SupervisorConfig& config, const VmHostFacts& facts = base_facts()) {
  auto plan = vm_plan(config, facts, kToken);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return plan.ok() ? *plan : VmPlan{};
}

// One word a line, so that a golden diff points at the word that changed.
std::string render(const VmPlan& plan) {
  std::ostringstream out;
  out << "==== qemu\n";
  for (const auto& word : plan.qemu_argv) out << word << "\n";
  out << "==== virtiofsd (shares " << plan.project_dir.string() << ")\n";
  for (const auto& word : plan.virtiofsd_plan.argv) out << word << "\n";
  out << "==== virtiofsd uid_map\n" << idmap::proc_map_text(plan.virtiofsd_plan.uid_map);
  out << "==== virtiofsd gid_map\n" << idmap::proc_map_text(plan.virtiofsd_plan.gid_map);
  out << "==== overlay\n" << plan.files.disk.string() << " " << plan.disk_bytes << " bytes\n";
  if (plan.qemu_account)
    out << "==== qemu account\n" << plan.qemu_account->uid << ":" << plan.qemu_account->gid << "\n";
  return out.str();
}

void expect_golden(const std::string& name, const supervisor::SupervisorConfig& config,
                   const VmHostFacts& facts = base_facts()) {
  testing_support::expect_golden("backend/vm/golden/" + name + ".txt", render(plan_of(config, facts)));
}

// The option each word that differs between two argv of one length belongs to (the word before it).
std::vector<std::string> changed_options(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  EXPECT_EQ(a.size(), b.size());
  std::vector<std::string> options;
  for (size_t i = 1; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] != b[i]) options.push_back(a[i - 1]);
  }
  return options;
}

using Options = std::vector<std::string>;

// Which relays the guest reaches is the supervisor's business (it listens for them in QEMU's network
// namespace, under the policy): QEMU's command line is the same under every policy, with or without an
// endpoint. The NIC stays under `none`, for the connect bridge.
TEST(VmPlan, TheNetworkPolicyLeavesQemusCommandLineAlone) {
  const auto base = plan_of(base_config()).qemu_argv;
  for (NetworkPolicy policy :
       {NetworkPolicy::kNone, NetworkPolicy::kInference, NetworkPolicy::kAllowlist, NetworkPolicy::kOpen}) {
    for (uint16_t port : {uint16_t{8080}, uint16_t{0}}) {
      auto c = base_config();
      c.network = policy;
      c.inference_port = port;
      c.allow = {"docs.example.org"};
      EXPECT_EQ(plan_of(c).qemu_argv, base) << to_string(policy) << " " << port;
    }
  }
}

// Security review M5: QEMU starts no process per guest connection (guestfwd's `cmd:` did: a socat
// each), so its own filter denies it every spawn and id change; the bridge's hostfwd is on 127.0.0.2,
// which the guest's connections (to 127.0.0.1 of QEMU's namespace) never reach.
TEST(VmPlan, QemuStartsNoProcessForTheGuestsConnections) {
  auto c = base_config();
  c.network = NetworkPolicy::kAllowlist;
  c.inference_port = 8080;
  std::string all;
  for (const auto& word : plan_of(c).qemu_argv) all += word + "\n";
  EXPECT_EQ(all.find("guestfwd"), std::string::npos) << all;
  EXPECT_EQ(all.find("cmd:"), std::string::npos) << all;
  EXPECT_NE(all.find("\nuser,id=net0,restrict=off,hostfwd=tcp:127.0.0.2:10023-10.0.2.15:1023\n"), std::string::npos)
      << all;
  EXPECT_NE(all.find("\non,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny\n"), std::string::npos)
      << all;
}

TEST(VmPlanGolden, SizedByTheManifest) {
  auto c = base_config();
  c.cpus = 4;
  c.memory_bytes = 3 * 1024 * kMiB;
  c.disk_bytes = 20 * 1024 * kMiB;
  expect_golden("sized", c);
}

// The ns backend's CPU quota is fractional; a vm gets whole vCPUs, rounded up, at least one.
TEST(VmPlanGolden, FractionalCpusRoundUp) {
  auto c = base_config();
  c.cpus = 1.5;
  expect_golden("cpus_fractional", c);
  c.cpus = 0.25;
  EXPECT_EQ(plan_of(c).qemu.cpus, 1);
}

TEST(VmPlanGolden, TinyMemoryIsRaisedToTheFloor) {
  auto c = base_config();
  c.memory_bytes = 100 * kMiB;
  expect_golden("memory_tiny", c);
  c.memory_bytes = 129 * kMiB + 1;  // whole MiB, rounded down
  EXPECT_EQ(plan_of(c).qemu.memory_mib, 129u);
}

// KVM: the host CPU, kvm-clock, no TSC hint even when the host's is known.
TEST(VmPlanGolden, Kvm) {
  auto c = base_config();
  c.vm_kvm = true;
  c.cpus = 2;
  expect_golden("kvm", c);
}

TEST(VmPlanGolden, TcgWithAnUnknownTsc) {
  auto facts = base_facts();
  facts.tsc_khz = 0;
  expect_golden("tcg_no_tsc", base_config(), facts);
}

// Each input moves the words it should and no other (a plan that ignored one would fail here).
TEST(VmPlan, EachInputChangesItsOwnWords) {
  auto base = plan_of(base_config()).qemu_argv;
  auto with = [&](auto change) {
    auto c = base_config();
    change(c);
    return changed_options(base, plan_of(c).qemu_argv);
  };
  EXPECT_EQ(with([](auto& c) { c.network = NetworkPolicy::kAllowlist; }), Options{});  // the relays' business
  EXPECT_EQ(with([](auto& c) { c.inference_port = 11434; }), Options{});
  EXPECT_EQ(with([](auto& c) { c.cpus = 3; }), (Options{"-smp", "-append"}));  // and no noapictimer
  EXPECT_EQ(with([](auto& c) { c.memory_bytes = 2048 * kMiB; }), (Options{"-m", "-object"}));
  EXPECT_EQ(with([](auto& c) { c.mount_point = "/src"; }), Options{"-append"});
  EXPECT_EQ(with([](auto& c) { c.id = "tnk-other"; }), (Options{"-name", "-append"}));
  EXPECT_EQ(with([](auto& c) { c.vm_kernel = "/k/vmlinux"; }), Options{"-kernel"});
  // -device: the workspace share keeps its event index under KVM only (qemu_argv.cc).
  EXPECT_EQ(with([](auto& c) { c.vm_kvm = true; }), (Options{"-accel", "-cpu", "-append", "-device"}));
  auto other_token = vm_plan(base_config(), base_facts(), "fedcba9876543210");
  ASSERT_TRUE(other_token.ok());
  EXPECT_EQ(changed_options(base, other_token->qemu_argv), Options{"-append"});
  // The project's owner moves only virtiofsd's maps; the project directory reaches neither argv.
  auto facts = base_facts();
  facts.project_uid = 2000;
  auto owner = plan_of(base_config(), facts);
  EXPECT_EQ(owner.qemu_argv, base);
  EXPECT_EQ(idmap::proc_map_text(owner.virtiofsd_plan.uid_map), "1000 2000 1\n");
  auto project = base_config();
  project.project_dir = "/elsewhere";
  EXPECT_EQ(plan_of(project).virtiofsd_plan.argv, plan_of(base_config()).virtiofsd_plan.argv);
}

// A credential route's credential and header reach no argv (the gateway's port is a relay's).
TEST(VmPlan, RoutesPutNoCredentialInAnyArgv) {
  auto c = base_config();
  net::CredentialRoute route;
  route.name = "github";
  route.host = "github.com";
  route.header_name = "Authorization";
  route.header_value = "Bearer route-secret";
  route.secrets = {"route-secret"};
  c.routes = {route};
  auto joined = [](const VmPlan& plan) {
    std::string all;
    for (const auto& word : plan.qemu_argv) all += word + "\n";
    for (const auto& word : plan.virtiofsd_plan.argv) all += word + "\n";
    return all;
  };
  std::string with = joined(plan_of(c));
  EXPECT_EQ(with.find("route-secret"), std::string::npos) << with;
  EXPECT_EQ(with.find("Bearer"), std::string::npos) << with;
  EXPECT_EQ(with, joined(plan_of(base_config())));
}

// A linked worktree's git dir: a second virtiofs device and virtiofsd, its path on the boot line;
// nothing else changes (without one, the golden plans above hold).
TEST(VmPlan, ALinkedWorktreesGitDirIsASecondShare) {
  auto base = plan_of(base_config());
  auto facts = base_facts();
  facts.git_common_dir = "/home/ann/code/main/.git";
  auto plan = plan_of(base_config(), facts);
  EXPECT_EQ(plan.qemu_argv.size(), base.qemu_argv.size() + 4);  // -chardev ..., -device ...
  std::string argv;
  for (const auto& word : plan.qemu_argv) argv += word + "\n";
  EXPECT_NE(argv.find("vhost-user-fs-device,chardev=vfsgit,tag=gitdir"), std::string::npos);
  EXPECT_NE(argv.find("path=/root/.local/state/tnk/sandboxes/tnk-demo/gitfs.sock"), std::string::npos);
  EXPECT_NE(argv.find("tnk.gitdir=/home/ann/code/main/.git"), std::string::npos);
  ASSERT_TRUE(plan.git_virtiofsd.has_value());
  EXPECT_EQ(plan.git_virtiofsd->source, kGitVirtiofsdSource);
  EXPECT_EQ(plan.git_virtiofsd_plan.uid_map, plan.virtiofsd_plan.uid_map);  // the same owner as the project
  EXPECT_FALSE(base.git_virtiofsd.has_value());
}

// Run by root, with root's ranges (here the legacy 100000-165535).
VmHostFacts root_facts() {
  VmHostFacts f = base_facts();
  f.run_by_root = true;
  f.uid_range = idmap::IdRange{100000, 65536};
  f.gid_range = idmap::IdRange{100000, 65536};
  f.git_common_dir = "/home/ann/code/main/.git";
  return f;
}

// Security review H1: run by root, QEMU runs as the last id of root's range and is handed every file
// by descriptor (the sockets, both disks, the kernel).
TEST(VmPlanGolden, H1RunByRootQemuIsHandedItsFiles) {
  auto c = base_config();
  c.network = NetworkPolicy::kAllowlist;
  expect_golden("run_by_root", c, root_facts());
}

TEST(VmPlan, H1RunByRootQemuNamesNoHostPathAndRunsAsTheRangesLastId) {
  auto c = base_config();
  c.network = NetworkPolicy::kAllowlist;
  auto under_root = [](const std::vector<std::string>& argv) {
    return std::count_if(argv.begin(), argv.end(), [](const std::string& w) { return w.find("/root/") != w.npos; });
  };
  VmPlan root = plan_of(c, root_facts());
  ASSERT_TRUE(root.qemu_account.has_value());
  EXPECT_EQ(root.qemu_account->uid, 165535u);
  EXPECT_EQ(root.qemu_account->gid, 165535u);
  EXPECT_TRUE(root.qemu.handed_files);
  EXPECT_EQ(under_root(root.qemu_argv), 0);
  // The control: the same sandbox rootless names its state directory and cache in QEMU's argv.
  VmHostFacts user = root_facts();
  user.run_by_root = false;
  VmPlan rootless = plan_of(c, user);
  EXPECT_FALSE(rootless.qemu_account.has_value());
  EXPECT_GE(under_root(rootless.qemu_argv), 8);
  // Both run the same guest: only the words that name files change.
  EXPECT_EQ(root.qemu_argv.size(), rootless.qemu_argv.size() + 6);  // three -add-fd
  // Root's ranges are required.
  VmHostFacts no_ranges = root_facts();
  no_ranges.uid_range.reset();
  EXPECT_FALSE(vm_plan(c, no_ranges, kToken).ok());
}

// Issue 32, R3-H2: the kernel's root is the read-only base disk and the agent switches to the overlay; a
// sandbox whose overlay an older tnk made (its base's agent cannot switch) boots from the overlay as then.
TEST(VmPlan, TheGuestBootsFromTheReadOnlyBaseDiskUnlessAnOlderTnkMadeTheOverlay) {
  auto joined = [](const std::vector<std::string>& argv) {
    std::string all;
    for (const auto& word : argv) all += word + "\n";
    return all;
  };
  const std::string now = joined(plan_of(base_config()).qemu_argv);
  EXPECT_NE(now.find(" ro console=ttyS0 reboot=t panic=-1 root=/dev/vdb "), std::string::npos) << now;
  EXPECT_NE(now.find(" tnk.root=/dev/vda\n"), std::string::npos) << now;
  EXPECT_NE(now.find("-drive\nid=boot,file=/root/.local/state/tnk/sandboxes/tnk-demo/base.img,format=raw,if=none,"
                     "readonly=on\n-device\nvirtio-blk-device,drive=boot\n"),
            std::string::npos)
      << now;
  auto facts = base_facts();
  facts.init_on_overlay = true;
  const std::string older = joined(plan_of(base_config(), facts).qemu_argv);
  EXPECT_NE(older.find(" rw console=ttyS0 reboot=t panic=-1 root=/dev/vda "), std::string::npos) << older;
  EXPECT_EQ(older.find("tnk.root="), std::string::npos);
  EXPECT_EQ(older.find("id=boot"), std::string::npos);
}

TEST(VmPlan, StateDirectoryFiles) {
  auto plan = plan_of(base_config());
  EXPECT_EQ(plan.files.agent_socket, "/root/.local/state/tnk/sandboxes/tnk-demo/agent.sock");
  EXPECT_EQ(plan.files.base_disk_link, "/root/.local/state/tnk/sandboxes/tnk-demo/base.img");
  EXPECT_EQ(plan.files.qemu_log, "/root/.local/state/tnk/sandboxes/tnk-demo/qemu.log");
  EXPECT_EQ(plan.files.virtiofsd_log, "/root/.local/state/tnk/sandboxes/tnk-demo/virtiofsd.log");
}

TEST(VmPlan, Refusals) {
  auto c = base_config();
  c.vm_kernel.clear();
  auto no_kernel = vm_plan(c, base_facts(), kToken);
  ASSERT_FALSE(no_kernel.ok());
  EXPECT_EQ(no_kernel.error().message, "the vm sandbox tnk-demo has no kernel or base disk in its configuration");
  c = base_config();
  c.mount_point = "/my work";  // the kernel command line splits on spaces
  EXPECT_EQ(vm_plan(c, base_facts(), kToken).error().kind, ErrorKind::kUsage);
  c = base_config();
  c.state_dir = "/state/a,b";  // virtiofsd's socket cannot carry a comma
  EXPECT_FALSE(vm_plan(c, base_facts(), kToken).ok());
  auto facts = base_facts();
  facts.project_uid = 0;  // virtiofsd would act as host root
  EXPECT_FALSE(vm_plan(base_config(), facts, kToken).ok());
}

}  // namespace
}  // namespace tnk::vm
