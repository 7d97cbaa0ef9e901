#include "host/setup_plan.h"

#include <gtest/gtest.h>

namespace tnk::host {
namespace {

using Kind = SetupOp::Kind;

// A Debian host with cgroup v1 (as this project's CI machine), /dev/kvm, no AppArmor restriction.
SetupFacts v1_host() {
  SetupFacts f;
  f.user = "alice";
  f.uid = 1001;
  f.gid = 1001;
  f.subuid = "tnkuser:100000:65536\n";
  f.subgid = "tnkuser:100000:65536\n";
  f.kvm_device = true;
  f.kvm_group = true;
  f.tnk_binary = "/usr/local/bin/tnk";
  f.v1_mounts = {{"memory", "/sys/fs/cgroup/memory"}, {"pids", "/sys/fs/cgroup/pids"}, {"cpu", "/sys/fs/cgroup/cpu"}};
  return f;
}

const SetupStep& step(const std::vector<SetupStep>& steps, const std::string& id) {
  for (const auto& s : steps) {
    if (s.id == id) return s;
  }
  ADD_FAILURE() << "no step " << id;
  return steps.front();
}

TEST(FreeSubordinateStart, SkipsEveryTakenLineOfBothFiles) {
  EXPECT_EQ(free_subordinate_start("", ""), 100000u);
  EXPECT_EQ(free_subordinate_start("a:100000:65536\n", ""), 165536u);
  EXPECT_EQ(free_subordinate_start("", "a:100000:65536\n"), 165536u);  // the gid file counts too
  EXPECT_EQ(free_subordinate_start("a:100000:65536\nb:165536:65536\n", "c:231072:10\n"), 231082u);
  // A gap too small for 65536 ids is passed over; one big enough below is used.
  EXPECT_EQ(free_subordinate_start("a:100000:1000\nb:140000:65536\n", ""), 205536u);
  EXPECT_EQ(free_subordinate_start("a:300000:65536\n", ""), 100000u);
  // Malformed lines are ignored, as newuidmap ignores them.
  EXPECT_EQ(free_subordinate_start("junk\na:b:c\n", ""), 100000u);
  EXPECT_EQ(free_subordinate_start("a:100000:4294900000\n", ""), std::nullopt);
}

TEST(PlanSetup, AddsAFreeRangeWithOneUsermodArgv) {
  auto steps = plan_setup(v1_host());
  ASSERT_TRUE(steps.ok()) << steps.error().message;
  const SetupStep& s = step(*steps, "subids");
  ASSERT_EQ(s.ops.size(), 1u);
  EXPECT_EQ(s.ops[0].kind, Kind::kRun);
  EXPECT_EQ(s.ops[0].argv, (std::vector<std::string>{"usermod", "--add-subuids", "165536-231071", "--add-subgids",
                                                     "165536-231071", "alice"}));
  EXPECT_EQ(s.done, "added subuid and subgid range 165536-231071 for alice");
  EXPECT_EQ(s.pending, "would add subuid and subgid range 165536-231071 for alice");
}

TEST(PlanRootSetup, ReservesAFreeRangeForRootAndNothingElse) {
  SetupFacts f = v1_host();
  f.user = "root";
  f.uid = 0;
  f.gid = 0;
  auto steps = plan_root_setup(f);
  ASSERT_TRUE(steps.ok()) << steps.error().message;
  ASSERT_EQ(steps->size(), 1u);  // no kvm group, AppArmor profile or cgroup subtree for root
  EXPECT_EQ(steps->front().ops[0].argv, (std::vector<std::string>{"usermod", "--add-subuids", "165536-231071",
                                                                  "--add-subgids", "165536-231071", "root"}));
  f.subuid += "root:165536:65536\n";
  f.subgid += "root:165536:65536\n";
  auto again = plan_root_setup(f);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->front().ops.empty());
}

TEST(PlanSetup, DisksOnlyWhenAskedThenTheHelperSetUidAndTheAllowanceOnce) {
  SetupFacts f = v1_host();
  auto none = plan_setup(f);
  ASSERT_TRUE(none.ok());
  for (const auto& s : *none) EXPECT_NE(s.id, "disks");
  f.disk_allowance = 1ull << 30;
  f.disk_helper = "/usr/local/libexec/tnk/tnk-disk";
  f.disks_conf = "bob 5\nalice 7\n";
  auto steps = plan_setup(f);
  ASSERT_TRUE(steps.ok()) << steps.error().message;
  const SetupStep& s = step(*steps, "disks");
  ASSERT_EQ(s.ops.size(), 3u);
  EXPECT_EQ(s.ops[0].argv, (std::vector<std::string>{"chmod", "4755", "/usr/local/libexec/tnk/tnk-disk"}));
  EXPECT_EQ(s.ops[2].path, "/etc/tnk/disks.conf");
  EXPECT_EQ(s.ops[2].content, "bob 5\nalice 1073741824\n");  // the user's old line replaced
  f.disk_helper_setuid = true;
  f.disks_conf = s.ops[2].content;
  auto again = plan_setup(f);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(step(*again, "disks").ops.empty());
  // A helper another user could replace is never made set-user-id root.
  f.disk_helper_setuid = false;
  f.disk_helper_writer = "/home/alice/tnk is owned by uid 1001";
  auto refused = plan_setup(f);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("refusing to make /usr/local/libexec/tnk/tnk-disk set-user-id root"),
            std::string::npos);
}

TEST(PlanSetup, AddsOnlyTheMissingKindOfRange) {
  SetupFacts f = v1_host();
  f.subuid += "alice:165536:65536\n";
  auto steps = plan_setup(f);
  ASSERT_TRUE(steps.ok());
  const SetupStep& s = step(*steps, "subids");
  ASSERT_EQ(s.ops.size(), 1u);
  EXPECT_EQ(s.ops[0].argv, (std::vector<std::string>{"usermod", "--add-subgids", "231072-296607", "alice"}));
  EXPECT_EQ(s.done, "added subgid range 231072-296607 for alice");
}

TEST(PlanSetup, AUserWithRangesGetsNoneAgain) {
  SetupFacts f = v1_host();
  f.subuid += "alice:165536:65536\n";
  f.subgid += "1001:165536:65536\n";  // by uid, as newgidmap also accepts
  auto steps = plan_setup(f);
  ASSERT_TRUE(steps.ok());
  EXPECT_TRUE(step(*steps, "subids").ops.empty());
  EXPECT_EQ(step(*steps, "subids").done, "alice already has subordinate uid and gid ranges");
}

TEST(PlanSetup, JoinsKvmOnlyWhereTheDeviceAndTheGroupExist) {
  SetupFacts f = v1_host();
  auto steps = plan_setup(f);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(step(*steps, "kvm").ops.size(), 1u);
  EXPECT_EQ(step(*steps, "kvm").ops[0].argv, (std::vector<std::string>{"usermod", "-aG", "kvm", "alice"}));
  f.kvm_member = true;
  EXPECT_EQ(step(*plan_setup(f), "kvm").done, "alice is already a member of kvm");
  EXPECT_TRUE(step(*plan_setup(f), "kvm").ops.empty());
  f.kvm_member = false;
  f.kvm_group = false;
  EXPECT_TRUE(step(*plan_setup(f), "kvm").ops.empty());
  f.kvm_group = true;
  f.kvm_device = false;
  EXPECT_TRUE(step(*plan_setup(f), "kvm").ops.empty());
}

TEST(PlanSetup, WritesAndLoadsTheAppArmorProfileOnlyWhereUserNamespacesAreRestricted) {
  SetupFacts f = v1_host();
  EXPECT_TRUE(step(*plan_setup(f), "apparmor").ops.empty());
  f.apparmor_restrict = "1";
  const auto steps = *plan_setup(f);
  const SetupStep& s = step(steps, "apparmor");
  ASSERT_EQ(s.ops.size(), 2u);
  EXPECT_EQ(s.ops[0].kind, Kind::kWriteFile);
  EXPECT_EQ(s.ops[0].path, "/etc/apparmor.d/tnk");
  EXPECT_NE(s.ops[0].content.find("profile tnk /usr/local/bin/tnk flags=(unconfined) {\n  userns,"), std::string::npos);
  EXPECT_EQ(s.ops[1].argv, (std::vector<std::string>{"apparmor_parser", "-r", "/etc/apparmor.d/tnk"}));
  f.apparmor_profile = apparmor_profile_text("/usr/local/bin/tnk");
  EXPECT_TRUE(step(*plan_setup(f), "apparmor").ops.empty());
  f.tnk_binary = "/opt/tnk/bin/tnk";  // a profile for another binary is rewritten
  EXPECT_EQ(step(*plan_setup(f), "apparmor").ops.size(), 2u);
}

TEST(PlanSetup, WritesTheProfileWhereAppArmorCouldRestrictUserNamespacesWithTheSwitchOff) {
  SetupFacts f = v1_host();
  f.apparmor_mediates_userns = true;  // Debian 13: AppArmor 4, kernel.apparmor_restrict_unprivileged_userns absent
  const SetupStep s = step(*plan_setup(f), "apparmor");
  ASSERT_EQ(s.ops.size(), 2u);
  EXPECT_NE(s.done.find("its switch is off"), std::string::npos) << s.done;
}

// Security review 3, R3-L3: the profile hands the right to create user namespaces to whoever can change
// the binary it names.
TEST(PlanSetup, NamesOnlyABinaryRootAloneCanChangeInTheAppArmorProfile) {
  SetupFacts f = v1_host();
  f.tnk_binary = "/home/alice/tnk/build/tnk";
  f.tnk_binary_writer = "/home/alice is owned by uid 1000";
  f.apparmor_mediates_userns = true;
  const SetupStep skipped = step(*plan_setup(f), "apparmor");
  EXPECT_TRUE(skipped.ops.empty());
  EXPECT_NE(skipped.done.find("no AppArmor profile written"), std::string::npos) << skipped.done;
  EXPECT_NE(skipped.done.find("/home/alice is owned by uid 1000"), std::string::npos) << skipped.done;
  f.apparmor_restrict = "1";  // tnk cannot work without it: the whole setup is refused, with the fix
  auto refused = plan_setup(f);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kPermission);
  EXPECT_NE(refused.error().hint.find("install tnk"), std::string::npos);
}

TEST(PlanSetup, GivesTheUserADirectoryInEachMountedV1Controller) {
  SetupFacts f = v1_host();
  f.v1_mounts.erase("cpu");
  auto steps = *plan_setup(f);
  const SetupStep& memory = step(steps, "cgroup_memory");
  ASSERT_EQ(memory.ops.size(), 4u);
  EXPECT_EQ(memory.ops[0].kind, Kind::kMkdir);
  EXPECT_EQ(memory.ops[0].path, "/sys/fs/cgroup/memory/tnk-user-alice");
  EXPECT_EQ(memory.ops[1].kind, Kind::kChown);
  EXPECT_EQ(memory.ops[2].path, "/sys/fs/cgroup/memory/tnk-user-alice/cgroup.procs");
  EXPECT_EQ(memory.ops[3].path, "/sys/fs/cgroup/memory/tnk-user-alice/tasks");
  EXPECT_EQ(memory.done.rfind("delegated the cgroup /sys/fs/cgroup/memory/tnk-user-alice for alice (at the "
                              "hierarchy's top: alice's processes may move there out of a cgroup an administrator",
                              0),
            0u)
      << memory.done;
  step(steps, "cgroup_pids");
  for (const auto& s : steps) EXPECT_NE(s.id, "cgroup_cpu");
}

// Security review 3, R3-L3: v1 lets a process's owner move it into any cgroup whose cgroup.procs the owner
// may write, so the user's directory goes below the user's own cgroup.
TEST(PlanSetup, PutsTheUsersV1DirectoryBelowTheUsersOwnCgroup) {
  EXPECT_EQ(v1_user_base("/user.slice/user-1001.slice/session-4.scope", 1001, true), "/user.slice/user-1001.slice");
  EXPECT_EQ(v1_user_base("/ci/job-17", 1001, false), "/ci/job-17");  // where sudo ran: the caller's own cgroup
  EXPECT_EQ(v1_user_base("/", 1001, false), "/");
  EXPECT_EQ(v1_user_base("", 1001, true), "/user.slice/user-1001.slice");  // root ran it for alice: her slice
  EXPECT_EQ(v1_user_base("", 1001, false), "");                            // not known: the top, with what that allows
  SetupFacts f = v1_host();
  f.v1_bases = {{"memory", "/ci/job-17"}, {"pids", "/ci/job-17"}, {"cpu", ""}};
  auto steps = *plan_setup(f);
  const SetupStep& memory = step(steps, "cgroup_memory");
  EXPECT_EQ(memory.ops[0].path, "/sys/fs/cgroup/memory/ci/job-17/tnk-user-alice");
  EXPECT_EQ(memory.done, "delegated the cgroup /sys/fs/cgroup/memory/ci/job-17/tnk-user-alice for alice");
  EXPECT_NE(step(steps, "cgroup_cpu").done.find("at the hierarchy's top"), std::string::npos);
  f.v1_bases["cpu"] = "/";  // the user's own cgroup is the top: nothing to leave
  EXPECT_EQ(step(*plan_setup(f), "cgroup_cpu").done,
            "delegated the cgroup /sys/fs/cgroup/cpu/tnk-user-alice for alice");
}

TEST(PlanSetup, AnExistingDirectoryIsChownedUnlessItIsTheUsersAlready) {
  SetupFacts f = v1_host();
  f.owners["/sys/fs/cgroup/pids/tnk-user-alice"] = 0;
  f.owners["/sys/fs/cgroup/memory/tnk-user-alice"] = 1001;
  auto steps = *plan_setup(f);
  const SetupStep& pids = step(steps, "cgroup_pids");
  ASSERT_EQ(pids.ops.size(), 3u);  // no mkdir
  EXPECT_EQ(pids.ops[0].kind, Kind::kChown);
  EXPECT_TRUE(step(steps, "cgroup_memory").ops.empty());
  EXPECT_EQ(step(steps, "cgroup_memory")
                .done.rfind("the cgroup /sys/fs/cgroup/memory/tnk-user-alice is already alice's (", 0),
            0u);
}

TEST(PlanSetup, OnCgroupV2EnablesTheControllersAroundTheUsersDirectory) {
  SetupFacts f = v1_host();
  f.v1_mounts.clear();
  f.v2_mount = "/sys/fs/cgroup";
  f.v2_available = {"cpu", "io", "memory", "pids"};
  f.v2_enabled = {"memory"};
  auto steps = *plan_setup(f);
  const SetupStep& s = step(steps, "cgroup");
  ASSERT_EQ(s.ops.size(), 7u);
  EXPECT_EQ(s.ops[0].kind, Kind::kWriteKernel);
  EXPECT_EQ(s.ops[0].path, "/sys/fs/cgroup/cgroup.subtree_control");
  EXPECT_EQ(s.ops[0].content, "+pids +cpu");
  EXPECT_EQ(s.ops[1].path, "/sys/fs/cgroup/tnk-user-alice");
  EXPECT_EQ(s.ops[6].path, "/sys/fs/cgroup/tnk-user-alice/cgroup.subtree_control");
  EXPECT_EQ(s.ops[6].content, "+memory +pids +cpu");
  // Done once: the user's directory with every controller enabled above it.
  f.v2_enabled = {"cpu", "memory", "pids"};
  f.owners["/sys/fs/cgroup/tnk-user-alice"] = 1001;
  EXPECT_TRUE(step(*plan_setup(f), "cgroup").ops.empty());
  // systemd delegates on its own.
  f.owners.clear();
  f.systemd = true;
  const std::vector<SetupStep> steps_under_systemd = *plan_setup(f);
  const SetupStep& scoped = step(steps_under_systemd, "cgroup");
  EXPECT_TRUE(scoped.ops.empty());
  EXPECT_NE(scoped.done.find("a scope that alice's systemd manager delegates"), std::string::npos) << scoped.done;
  EXPECT_NE(scoped.done.find("loginctl enable-linger alice"), std::string::npos) << scoped.done;
}

TEST(PlanSetup, RefusesAUserNameThatIsNoPathComponent) {
  SetupFacts f = v1_host();
  f.user = "../alice";
  EXPECT_FALSE(plan_setup(f).ok());
}

TEST(SetupJson, SaysWhatChangedAndTheCommands) {
  SetupFacts f = v1_host();
  f.kvm_member = true;
  auto steps = *plan_setup(f);
  nlohmann::json doc = setup_json("alice", steps, true);
  EXPECT_EQ(doc["user"], "alice");
  EXPECT_EQ(doc["dry_run"], true);
  EXPECT_EQ(doc["steps"][0]["id"], "subids");
  EXPECT_EQ(doc["steps"][0]["changed"], true);
  EXPECT_EQ(doc["steps"][0]["message"], "would add subuid and subgid range 165536-231071 for alice");
  EXPECT_EQ(doc["steps"][0]["commands"][0], "usermod --add-subuids 165536-231071 --add-subgids 165536-231071 alice");
  EXPECT_EQ(doc["steps"][1]["changed"], false);
  EXPECT_EQ(doc["steps"][1]["message"], "alice is already a member of kvm");
}

}  // namespace
}  // namespace tnk::host
