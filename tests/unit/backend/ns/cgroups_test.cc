// Cgroup detection and planning as pure functions of /proc text: the v1 hybrid host this project is
// developed on, a delegated cgroup v2 host, and a host with nothing usable.
#include <gtest/gtest.h>

#include <optional>

#include "backend/ns/cgroups.h"

namespace tnk::ns {
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

TEST(NsCgroupsTest, ParsesProcCgroup) {
  auto m = parse_proc_cgroup(kHybridCgroup);
  ASSERT_EQ(m.size(), 6U);
  EXPECT_EQ(m[2].hierarchy, 4);
  EXPECT_EQ(m[2].controllers, std::vector<std::string>{"memory"});
  EXPECT_EQ(m[2].path, "/process_api/3329dfd4");
  EXPECT_EQ(m[5].hierarchy, 0);
  EXPECT_TRUE(m[5].controllers.empty());
  EXPECT_EQ(m[5].path, "/");
}

TEST(NsCgroupsTest, ParsesCgroupMountsAndFindsDirectories) {
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

TEST(NsCgroupsTest, PlansV1UnderOurOwnCgroupsAsRoot) {
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

TEST(NsCgroupsTest, PrefersDelegatedV2AndSharesOneDirectory) {
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

TEST(NsCgroupsTest, WithoutV2OrRootLimitsAreUnapplied) {
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

TEST(NsCgroupsTest, AsRootTheNoteNamesWhatIsMissing) {
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

// A cgroup v2 host (no v1 hierarchy) without a delegated subtree: nothing tnk setup or a systemd unit
// could do gives the limits a place yet, and the fix says so rather than send the user there.
TEST(NsCgroupsTest, OnACgroupV2HostTheFixSaysItIsNotThereYet) {
  CgroupHost host = alice_host();
  host.v2_dir = "/sys/fs/cgroup/user.slice/user-1001.slice/session-2.scope";
  const std::string not_yet =
      "tnk cannot place a sandbox's cgroups on a cgroup v2 host yet (security review M5, open; docs/rootless.md)";
  EXPECT_EQ(plan_cgroups(host, "abc", memory_limit()).unapplied.at(0).fix, not_yet);
  host.root = true;
  EXPECT_EQ(plan_cgroups(host, "abc", memory_limit()).unapplied.at(0).fix, not_yet);
}

// Security review M5: a start without its pids and memory limits is refused (exit 77) with what is
// missing, why, the fix and the opt-in. Before, the plan below started the sandbox with only a note.
TEST(NsCgroupsTest, M5APlanWithNothingAppliedIsRefused) {
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
TEST(NsCgroupsTest, M5APlanMissingOnlyPidsOrOnlyMemoryIsRefused) {
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
TEST(NsCgroupsTest, M5APlanWithPidsAndMemoryAppliedPasses) {
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
TEST(NsCgroupsTest, M5TheOptInLetsAPlanWithoutLimitsStart) {
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
TEST(NsCgroupsTest, AnOrdinaryUserPlansBelowTheDirectorySetupGaveIt) {
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
TEST(NsCgroupsTest, ForeseesADirectoryItCannotCreate) {
  CgroupPlan plan;
  plan.dirs.push_back({"/proc/1/tnk-abc", {"pids"}, {{"pids.max", "4096"}}});  // /proc/1: no new entries
  plan.dirs.push_back({std::filesystem::temp_directory_path() / "tnk-abc", {"memory"}, {}});
  std::vector<UnappliedLimits> foreseen = foresee_unapplied(plan);
  ASSERT_EQ(foreseen.size(), 1U);
  EXPECT_EQ(foreseen[0].controllers, (std::vector<std::string>{"pids"}));
  EXPECT_EQ(foreseen[0].why.rfind("cannot create cgroup /proc/1/tnk-abc: ", 0), 0U) << foreseen[0].why;
}

TEST(NsCgroupsTest, DetectsThisHost) {
  auto host = detect_cgroup_host();
  ASSERT_TRUE(host.ok()) << host.error().message;
  // Whatever the host, a plan for it names only directories below our own cgroups.
  CgroupPlan plan = plan_cgroups(*host, "probe", Limits{});
  for (const auto& d : plan.dirs) EXPECT_EQ(d.dir.filename(), "tnk-probe");
}

}  // namespace
}  // namespace tnk::ns
