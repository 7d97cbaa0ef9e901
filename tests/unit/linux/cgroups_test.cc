// Cgroup detection and planning as pure functions of /proc text: the v1 hybrid host this project is
// developed on, a delegated cgroup v2 host, and a host with nothing usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>

#include "linux/cgroups.h"

namespace tnk::linux {
namespace {

constexpr const char* kHybridCgroup =
    "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/3329dfd4\n2:cpuacct:/\n1:cpu:/\n0::/\n";
constexpr const char* kHybridMounts =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

// An ordinary user's host (alice), with only what each test gives it.
CgroupHost alice_host() {
  CgroupHost host;
  host.root = false;
  host.user = "alice";
  return host;
}

// Limits with a memory limit (and a cpu one when given).
Limits memory_limit(std::optional<double> cpus = std::nullopt) {
  Limits limits;
  limits.memory_bytes = 512;
  limits.cpus = cpus;
  return limits;
}

TEST(CgroupsTest, ParsesProcCgroup) {
  auto m = parse_proc_cgroup(kHybridCgroup);
  ASSERT_EQ(m.size(), 6U);
  EXPECT_EQ(m[2].hierarchy, 4);
  EXPECT_EQ(m[2].controllers, std::vector<std::string>{"memory"});
  EXPECT_EQ(m[2].path, "/process_api/3329dfd4");
  EXPECT_EQ(m[5].hierarchy, 0);
  EXPECT_TRUE(m[5].controllers.empty());
  EXPECT_EQ(m[5].path, "/");
}

TEST(CgroupsTest, ParsesCgroupMountsAndFindsDirectories) {
  auto mounts = parse_cgroup_mounts(kHybridMounts);
  ASSERT_EQ(mounts.size(), 6U);  // the tmpfs is not a cgroup mount
  EXPECT_TRUE(mounts.back().v2);
  EXPECT_EQ(mounts[0].controllers, std::vector<std::string>{"cpu"});
  auto members = parse_proc_cgroup(kHybridCgroup);
  EXPECT_EQ(cgroup_dir(members[2], mounts), std::filesystem::path("/sys/fs/cgroup/memory/process_api/3329dfd4"));
  EXPECT_EQ(cgroup_dir(members[5], mounts), std::filesystem::path("/sys/fs/cgroup/unified"));
  EXPECT_EQ(cgroup_dir(members[0], mounts), std::filesystem::path("/sys/fs/cgroup/systemd"));
  // A mount whose root is a subtree (as inside a container): paths are taken relative to it.
  auto nested = parse_cgroup_mounts("50 1 0:40 /outer /cg rw - cgroup2 cgroup2 rw\n");
  CgroupMembership inner{0, {}, "/outer/inner"};
  EXPECT_EQ(cgroup_dir(inner, nested), std::filesystem::path("/cg/inner"));
  CgroupMembership elsewhere{0, {}, "/other"};
  EXPECT_FALSE(cgroup_dir(elsewhere, nested).has_value());
  // Escaped spaces in a mount point.
  auto spaced = parse_cgroup_mounts("50 1 0:40 / /my\\040cg rw - cgroup2 cgroup2 rw\n");
  ASSERT_EQ(spaced.size(), 1U);
  EXPECT_EQ(spaced[0].mount_point, std::filesystem::path("/my cg"));
}

TEST(CgroupsTest, PlansV1UnderOurOwnCgroupsAsRoot) {
  CgroupHost host;
  host.root = true;
  host.v2_dir = "/sys/fs/cgroup/unified";  // no controllers delegated there
  host.v1 = {{"memory", "/sys/fs/cgroup/memory/process_api/x"},
             {"pids", "/sys/fs/cgroup/pids"},
             {"cpu", "/sys/fs/cgroup/cpu"}};
  Limits limits;
  limits.memory_bytes = 1 << 30;
  limits.cpus = 1.5;
  limits.pids = 100;
  CgroupPlan plan = plan_cgroups(host, "abc", limits);
  EXPECT_TRUE(plan.unapplied.empty());
  EXPECT_TRUE(require_limits(plan.unapplied, false).ok());
  ASSERT_EQ(plan.dirs.size(), 3U);
  EXPECT_EQ(plan.dirs[0].dir, std::filesystem::path("/sys/fs/cgroup/pids/tnk-abc"));
  EXPECT_EQ(plan.dirs[0].files, (std::vector<std::pair<std::string, std::string>>{{"pids.max", "100"}}));
  EXPECT_EQ(plan.dirs[1].dir, std::filesystem::path("/sys/fs/cgroup/memory/process_api/x/tnk-abc"));
  EXPECT_EQ(plan.dirs[1].files[0], (std::pair<std::string, std::string>{"memory.limit_in_bytes", "1073741824"}));
  EXPECT_EQ(plan.dirs[2].files, (std::vector<std::pair<std::string, std::string>>{{"cpu.cfs_period_us", "100000"},
                                                                                  {"cpu.cfs_quota_us", "150000"}}));
}

TEST(CgroupsTest, PrefersDelegatedV2AndSharesOneDirectory) {
  CgroupHost host;
  host.root = true;
  host.v2_dir = "/sys/fs/cgroup/user.slice/tnk.service";
  host.v2_delegated = {"memory", "pids", "cpu"};
  host.v1 = {{"memory", "/sys/fs/cgroup/memory"}};
  Limits limits;
  limits.memory_bytes = 512;
  limits.cpus = 0.001;  // below the kernel's minimum quota
  CgroupPlan plan = plan_cgroups(host, "abc", limits);
  ASSERT_EQ(plan.dirs.size(), 1U);
  EXPECT_EQ(plan.dirs[0].dir, std::filesystem::path("/sys/fs/cgroup/user.slice/tnk.service/tnk-abc"));
  EXPECT_EQ(plan.dirs[0].files, (std::vector<std::pair<std::string, std::string>>{
                                    {"pids.max", "4096"}, {"memory.max", "512"}, {"cpu.max", "1000 100000"}}));
}

TEST(CgroupsTest, WithoutV2OrRootLimitsAreUnapplied) {
  CgroupHost host = alice_host();
  host.v1 = {{"memory", "/sys/fs/cgroup/memory"}};
  Limits limits = memory_limit();
  CgroupPlan plan = plan_cgroups(host, "abc", limits);
  EXPECT_TRUE(plan.dirs.empty());
  ASSERT_EQ(plan.unapplied.size(), 1U);
  EXPECT_EQ(plan.unapplied[0].controllers, (std::vector<std::string>{"pids", "memory"}));
  auto unapplied = apply_cgroups(plan);
  ASSERT_TRUE(unapplied.ok());
  ASSERT_EQ(unapplied->size(), 1U);
  EXPECT_EQ(unapplied_note(unapplied->front()),
            "pids/memory limits not applied: no cgroup subtree is delegated to alice (run `sudo tnk setup --user "
            "alice` once)");
}

TEST(CgroupsTest, AsRootTheNoteNamesWhatIsMissing) {
  CgroupHost host;
  host.root = true;
  host.v1 = {{"memory", "/sys/fs/cgroup/memory"}};
  CgroupPlan plan = plan_cgroups(host, "abc", Limits{});
  ASSERT_EQ(plan.unapplied.size(), 1U);
  EXPECT_EQ(plan.unapplied[0].controllers, (std::vector<std::string>{"pids"}));
  EXPECT_EQ(unapplied_note(plan.unapplied[0]),
            "pids limits not applied: no delegated cgroup v2 controller and no cgroup v1 hierarchy this process "
            "may write (mount the cgroup v1 hierarchy of each controller)");
}

// Issue 31: a host whose cgroups systemd manages (Debian 12, 13, ...), as alice logged in: her session's
// scope is root's, so the limits go in the delegated scope her manager gives the supervisor. Before,
// this plan had nowhere to go, and the start was refused (exit 77).
SystemdFacts alices_manager(bool reachable, std::set<std::string> controllers = {"cpu", "memory", "pids"}) {
  SystemdFacts facts;
  facts.booted = true;
  facts.uid = 1001;
  facts.user = "alice";
  facts.runtime_dir = "/run/user/1001";
  facts.manager_reachable = reachable;
  facts.controllers = std::move(controllers);
  return facts;
}

CgroupHost alice_on_systemd(SystemdFacts facts) {
  CgroupHost host = alice_host();
  host.v2_dir = "/sys/fs/cgroup/user.slice/user-1001.slice/session-2.scope";
  host.systemd = std::move(facts);
  return host;
}

TEST(CgroupsTest, OnASystemdHostTheLimitsGoInTheSupervisorsScope) {
  CgroupHost host = alice_on_systemd(alices_manager(true));
  ASSERT_TRUE(supervisor_scope(host).has_value());
  CgroupPlan plan = plan_cgroups(host, "tnk-demo-1234abcd", memory_limit(1));
  EXPECT_TRUE(plan.in_supervisor_scope);
  EXPECT_TRUE(plan.unapplied.empty());
  ASSERT_EQ(plan.dirs.size(), 1U);
  EXPECT_EQ(plan.dirs[0].dir, std::filesystem::path(kScopeStandIn) / "tnk-demo-1234abcd");
  EXPECT_EQ(plan.dirs[0].controllers, (std::vector<std::string>{"pids", "memory", "cpu"}));
  EXPECT_TRUE(foresee_unapplied(plan).empty());  // the scope does not exist yet: nothing to look at
  EXPECT_TRUE(require_limits(plan.unapplied, false).ok());
  // Only the supervisor in its scope applies a plan; the stand-in is never made.
  EXPECT_FALSE(apply_cgroups(plan).ok());
}

TEST(CgroupsTest, WithoutAUserManagerTheRefusalSaysToLogInOrLinger) {
  CgroupHost host = alice_on_systemd(alices_manager(false));
  EXPECT_FALSE(supervisor_scope(host).has_value());
  CgroupPlan plan = plan_cgroups(host, "abc", memory_limit());
  Status refused = require_limits(plan.unapplied, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kPermission);
  EXPECT_EQ(refused.error().message,
            "refusing to start the sandbox without its pids and memory limits: no systemd user manager runs for "
            "alice (no login session and no lingering), and only it can delegate a cgroup to alice (a fork bomb "
            "or a memory hog inside would reach the host)");
  EXPECT_NE(refused.error().hint.find("`sudo loginctl enable-linger alice`"), std::string::npos)
      << refused.error().hint;
  EXPECT_NE(refused.error().hint.find("allow_unlimited = true"), std::string::npos);
}

TEST(CgroupsTest, AManagerThatDelegatesNoMemoryIsNamedWithTheDropIn) {
  CgroupHost host = alice_on_systemd(alices_manager(true, {"cpu", "pids"}));
  CgroupPlan plan = plan_cgroups(host, "abc", memory_limit());
  ASSERT_EQ(plan.unapplied.size(), 1U);
  EXPECT_EQ(plan.unapplied[0].controllers, std::vector<std::string>{"memory"});
  EXPECT_EQ(plan.unapplied[0].why, "systemd delegates only cpu pids to alice's manager");
  EXPECT_NE(plan.unapplied[0].fix.find("Delegate=cpu memory pids"), std::string::npos);
}

TEST(CgroupsTest, OnACgroupV2HostWithoutSystemdTheFixSaysSo) {
  CgroupHost host = alice_host();
  host.v2_dir = "/sys/fs/cgroup/some/where";
  EXPECT_EQ(plan_cgroups(host, "abc", memory_limit()).unapplied.at(0).fix,
            "on a cgroup v2 host tnk places a sandbox's cgroups through systemd, which does not run here "
            "(docs/rootless.md)");
  host.root = true;
  EXPECT_EQ(plan_cgroups(host, "abc", memory_limit()).unapplied.at(0).fix,
            "run tnk from the cgroup v2 hierarchy's root cgroup, or on a host whose cgroups systemd manages");
}

// A settled supervisor's own cgroup is the scope's leaf: its sandboxes go beside the leaf.
TEST(CgroupsTest, ASandboxesCgroupIsNamedByItsIdOnce) {
  EXPECT_EQ(sandbox_cgroup_name("tnk-demo-1234abcd"), "tnk-demo-1234abcd");  // was tnk-tnk-demo-1234abcd
  EXPECT_EQ(sandbox_cgroup_name("probe"), "tnk-probe");
  EXPECT_TRUE(
      is_supervisor_leaf("/sys/fs/cgroup/user.slice/user-1001.slice/user@1001.service/app.slice/"
                         "tnk-x.scope/tnk-supervisor"));
  EXPECT_FALSE(is_supervisor_leaf("/sys/fs/cgroup/user.slice/user-1001.slice/session-2.scope"));
}

TEST(CgroupsTest, TheScopeCommandAsksTheRightManagerForADelegatedScope) {
  std::vector<std::string> command = {"/proc/self/fd/5", "__supervise", "tnk-demo-1234abcd"};
  EXPECT_EQ(scope_command(alices_manager(true), "/usr/bin/systemd-run", "tnk-demo-1234abcd-0f0f0f0f", command),
            (std::vector<std::string>{"/usr/bin/systemd-run", "--user", "--scope", "--quiet", "--property=Delegate=yes",
                                      "--description=tnk sandbox supervisor", "--unit=tnk-demo-1234abcd-0f0f0f0f", "--",
                                      "/proc/self/fd/5", "__supervise", "tnk-demo-1234abcd"}));
  EXPECT_EQ(scope_environment(alices_manager(true)), std::vector<std::string>{"XDG_RUNTIME_DIR=/run/user/1001"});
  SystemdFacts root;
  root.root = true;
  root.booted = true;
  std::vector<std::string> as_root = scope_command(root, "/usr/bin/systemd-run", "u", command);
  EXPECT_EQ(std::count(as_root.begin(), as_root.end(), "--user"), 0);
  EXPECT_EQ(std::count(as_root.begin(), as_root.end(), "--slice=tnk"), 1);
  EXPECT_TRUE(scope_environment(root).empty());
}

// Security review M5: a start without its pids and memory limits is refused (exit 77) with what is
// missing, why, the fix and the opt-in. Before, the plan below started the sandbox with only a note.
TEST(CgroupsTest, M5APlanWithNothingAppliedIsRefused) {
  CgroupHost host = alice_host();
  host.v1 = {{"memory", "/sys/fs/cgroup/memory"}, {"pids", "/sys/fs/cgroup/pids"}, {"cpu", "/sys/fs/cgroup/cpu"}};
  Limits limits = memory_limit(1);
  CgroupPlan plan = plan_cgroups(host, "abc", limits);
  Status refused = require_limits(plan.unapplied, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kPermission);
  EXPECT_EQ(refused.error().message,
            "refusing to start the sandbox without its pids and memory limits: no cgroup subtree is delegated to "
            "alice (a fork bomb or a memory hog inside would reach the host)");
  EXPECT_EQ(refused.error().hint,
            "run `sudo tnk setup --user alice` once; or, to start without them, set allow_unlimited = true in "
            "tnk.toml (or TNK_ALLOW_UNLIMITED=1)");
}

// One of the two missing is enough to refuse, and the message names only that one.
TEST(CgroupsTest, M5APlanMissingOnlyPidsOrOnlyMemoryIsRefused) {
  CgroupHost host = alice_host();
  Limits limits = memory_limit();
  host.v1_user = {{"memory", "/sys/fs/cgroup/memory/tnk-user-alice"}};  // no pids directory
  Status no_pids = require_limits(plan_cgroups(host, "abc", limits).unapplied, false);
  ASSERT_FALSE(no_pids.ok());
  EXPECT_EQ(no_pids.error().message.rfind("refusing to start the sandbox without its pids limit: no cgroup subtree "
                                          "is delegated to alice",
                                          0),
            0U)
      << no_pids.error().message;
  host.v1_user = {{"pids", "/sys/fs/cgroup/pids/tnk-user-alice"}};  // no memory directory
  Status no_memory = require_limits(plan_cgroups(host, "abc", limits).unapplied, false);
  ASSERT_FALSE(no_memory.ok());
  EXPECT_EQ(no_memory.error().message.rfind("refusing to start the sandbox without its memory limit: ", 0), 0U)
      << no_memory.error().message;
  // A directory the kernel would not let us create counts as missing too, named with its path.
  std::vector<UnappliedLimits> denied = {
      {{"pids"}, "cannot create cgroup /sys/fs/cgroup/pids/x/tnk-abc: Read-only file system", ""}};
  Status ro = require_limits(denied, false);
  ASSERT_FALSE(ro.ok());
  EXPECT_EQ(ro.error().message,
            "refusing to start the sandbox without its pids limit: cannot create cgroup "
            "/sys/fs/cgroup/pids/x/tnk-abc: Read-only file system (a fork bomb or a memory hog inside would reach "
            "the host)");
}

// The pair: both applied passes, whatever becomes of cpu; a profile without a memory limit needs only pids.
TEST(CgroupsTest, M5APlanWithPidsAndMemoryAppliedPasses) {
  CgroupHost host = alice_host();
  host.v1_user = {{"memory", "/sys/fs/cgroup/memory/tnk-user-alice"}, {"pids", "/sys/fs/cgroup/pids/tnk-user-alice"}};
  Limits limits = memory_limit(1);
  CgroupPlan plan = plan_cgroups(host, "abc", limits);
  ASSERT_EQ(plan.unapplied.size(), 1U);  // cpu has no place
  EXPECT_EQ(plan.unapplied[0].controllers, (std::vector<std::string>{"cpu"}));
  EXPECT_TRUE(require_limits(plan.unapplied, false).ok());
  host.v1_user.erase("memory");
  EXPECT_TRUE(require_limits(plan_cgroups(host, "abc", Limits{}).unapplied, false).ok());
}

// The opt-in (tnk.toml allow_unlimited, TNK_ALLOW_UNLIMITED): the same plans start, with their note.
TEST(CgroupsTest, M5TheOptInLetsAPlanWithoutLimitsStart) {
  CgroupHost host = alice_host();
  Limits limits = memory_limit();
  CgroupPlan plan = plan_cgroups(host, "abc", limits);
  ASSERT_FALSE(require_limits(plan.unapplied, false).ok());
  EXPECT_TRUE(require_limits(plan.unapplied, true).ok());
  host.root = true;
  EXPECT_TRUE(require_limits(plan_cgroups(host, "abc", limits).unapplied, true).ok());
  EXPECT_FALSE(require_limits(plan_cgroups(host, "abc", limits).unapplied, false).ok());
}

// The pair of the test above: the same user after `tnk setup`, its sandbox below tnk-user-<user>.
TEST(CgroupsTest, AnOrdinaryUserPlansBelowTheDirectorySetupGaveIt) {
  CgroupHost host = alice_host();
  host.v1 = {{"memory", "/sys/fs/cgroup/memory/process_api/x"}, {"pids", "/sys/fs/cgroup/pids"}};
  host.v1_user = {{"memory", "/sys/fs/cgroup/memory/tnk-user-alice"}, {"pids", "/sys/fs/cgroup/pids/tnk-user-alice"}};
  Limits limits = memory_limit(1);
  CgroupPlan plan = plan_cgroups(host, "abc", limits);
  ASSERT_EQ(plan.dirs.size(), 2U);
  EXPECT_EQ(plan.dirs[0].dir, std::filesystem::path("/sys/fs/cgroup/pids/tnk-user-alice/tnk-abc"));
  EXPECT_EQ(plan.dirs[1].dir, std::filesystem::path("/sys/fs/cgroup/memory/tnk-user-alice/tnk-abc"));
  ASSERT_EQ(plan.unapplied.size(), 1U);
  EXPECT_EQ(plan.unapplied[0].controllers, (std::vector<std::string>{"cpu"}));  // no cpu directory was given
}

// What the command line checks before a start makes anything: a planned directory whose parent it may not
// write is foreseen as missing, with its path; one it may write is not.
TEST(CgroupsTest, ForeseesADirectoryItCannotCreate) {
  CgroupPlan plan;
  plan.dirs.push_back({"/proc/1/tnk-abc", {"pids"}, {{"pids.max", "4096"}}});  // /proc/1: no new entries
  plan.dirs.push_back({std::filesystem::temp_directory_path() / "tnk-abc", {"memory"}, {}});
  std::vector<UnappliedLimits> foreseen = foresee_unapplied(plan);
  ASSERT_EQ(foreseen.size(), 1U);
  EXPECT_EQ(foreseen[0].controllers, (std::vector<std::string>{"pids"}));
  EXPECT_EQ(foreseen[0].why.rfind("cannot create cgroup /proc/1/tnk-abc: ", 0), 0U) << foreseen[0].why;
}

TEST(CgroupsTest, DetectsThisHost) {
  auto host = detect_cgroup_host();
  ASSERT_TRUE(host.ok()) << host.error().message;
  // Whatever the host, a plan for it names only directories below our own cgroups.
  CgroupPlan plan = plan_cgroups(*host, "probe", Limits{});
  for (const auto& d : plan.dirs) EXPECT_EQ(d.dir.filename(), "tnk-probe");
}

}  // namespace
}  // namespace tnk::linux
