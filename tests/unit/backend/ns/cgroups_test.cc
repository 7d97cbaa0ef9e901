// Cgroup detection and planning as pure functions of /proc text: the v1 hybrid host this project is
// developed on, a delegated cgroup v2 host, and a host with nothing usable.
#include <gtest/gtest.h>

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
  CgroupHost host;
  host.root = false;
  host.user = "alice";
  host.v1 = {{"memory", "/sys/fs/cgroup/memory"}};
  Limits limits;
  limits.memory_bytes = 512;
  CgroupPlan plan = plan_cgroups(host, "abc", limits);
  EXPECT_TRUE(plan.dirs.empty());
  EXPECT_EQ(plan.unapplied, (std::vector<std::string>{"pids", "memory"}));
  auto notes = apply_cgroups(plan);
  ASSERT_TRUE(notes.ok());
  ASSERT_EQ(notes->size(), 1U);
  EXPECT_EQ(notes->front(),
            "pids/memory limits not applied: no cgroup subtree is delegated to alice (run `sudo tnk setup --user "
            "alice` once, or tnk from a systemd unit with Delegate=yes)");
}

TEST(NsCgroupsTest, AsRootTheNoteIsUnchanged) {
  CgroupHost host;
  host.root = true;
  CgroupPlan plan = plan_cgroups(host, "abc", Limits{});
  EXPECT_EQ(plan.unapplied, (std::vector<std::string>{"pids"}));
  EXPECT_EQ(plan.unapplied_fix.rfind("no delegated cgroup v2 controller and no cgroup v1 hierarchy", 0), 0U);
}

// The pair of the test above: the same user after `tnk setup`, its sandbox below tnk-user-<user>.
TEST(NsCgroupsTest, AnOrdinaryUserPlansBelowTheDirectorySetupGaveIt) {
  CgroupHost host;
  host.root = false;
  host.user = "alice";
  host.v1 = {{"memory", "/sys/fs/cgroup/memory/process_api/x"}, {"pids", "/sys/fs/cgroup/pids"}};
  host.v1_user = {{"memory", "/sys/fs/cgroup/memory/tnk-user-alice"}, {"pids", "/sys/fs/cgroup/pids/tnk-user-alice"}};
  Limits limits;
  limits.memory_bytes = 512;
  limits.cpus = 1;
  CgroupPlan plan = plan_cgroups(host, "abc", limits);
  ASSERT_EQ(plan.dirs.size(), 2U);
  EXPECT_EQ(plan.dirs[0].dir, std::filesystem::path("/sys/fs/cgroup/pids/tnk-user-alice/tnk-abc"));
  EXPECT_EQ(plan.dirs[1].dir, std::filesystem::path("/sys/fs/cgroup/memory/tnk-user-alice/tnk-abc"));
  EXPECT_EQ(plan.unapplied, (std::vector<std::string>{"cpu"}));  // no cpu directory was given
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
