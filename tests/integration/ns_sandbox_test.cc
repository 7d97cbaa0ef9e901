// The ns engine end to end on a real image tree: identities, what a session can see, the project
// mount, persistence of the root, generated files, network namespace.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "backend/ns/credentials.h"
#include "backend/ns/sandbox.h"
#include "ns_test_util.h"

namespace tnk::ns::testing {
namespace {

std::string status_field(const std::string& status, const std::string& key) {
  std::istringstream in(status);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return trim(line.substr(key.size() + 1));
  }
  return "<missing>";
}

std::string hex_caps(uint64_t caps) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(caps));
  return buf;
}

TEST_F(NsSandboxTest, AgentRunsAsUid1000WithoutCapabilities) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  RunResult id = run(init, {"id", "-u"});
  EXPECT_EQ(id.status, 0) << id.err;
  EXPECT_EQ(trim(id.out), "1000");
  RunResult status = run(init, {"cat", "/proc/self/status"});
  ASSERT_EQ(status.status, 0) << status.err;
  EXPECT_EQ(status_field(status.out, "Uid"), "1000\t1000\t1000\t1000");
  EXPECT_EQ(status_field(status.out, "Gid"), "1000\t1000\t1000\t1000");
  EXPECT_EQ(status_field(status.out, "Groups"), "");
  for (const char* set : {"CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb"}) {
    EXPECT_EQ(status_field(status.out, set), "0000000000000000") << set;
  }
  EXPECT_EQ(status_field(status.out, "NoNewPrivs"), "1");
  EXPECT_EQ(status_field(status.out, "Seccomp"), "2");
}

TEST_F(NsSandboxTest, RootIdentityHasDockerCapabilitiesOnly) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  RunResult status = run(init, {"cat", "/proc/self/status"}, session::Identity::kRoot);
  ASSERT_EQ(status.status, 0) << status.err;
  std::string docker = hex_caps(docker_default_capabilities());
  EXPECT_EQ(docker, "00000000a80425fb");
  EXPECT_EQ(status_field(status.out, "Uid"), "0\t0\t0\t0");
  EXPECT_EQ(status_field(status.out, "CapEff"), docker);
  EXPECT_EQ(status_field(status.out, "CapBnd"), docker);
  EXPECT_EQ(status_field(status.out, "CapInh"), "0000000000000000");
  EXPECT_EQ(status_field(status.out, "NoNewPrivs"), "1");
  EXPECT_EQ(status_field(status.out, "Seccomp"), "2");
  // Seen from the host, the sandbox's root is 100000, never host root.
  RunResult sleeper = run(init, {"id", "-u"}, session::Identity::kRoot);
  EXPECT_EQ(trim(sleeper.out), "0");
}

// Security review M3: no session of the agent can become root, provisioning's agent phase included (it
// is this identity; its root work is a root session of its own). A sudoers entry changes nothing.
TEST_F(NsSandboxTest, NoAgentSessionCanSudoEvenWithASudoersEntry) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  RunResult add =
      run(init,
          {"sh", "-c", "echo 'agent ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/agent && chmod 440 /etc/sudoers.d/agent"},
          session::Identity::kRoot);
  ASSERT_EQ(add.status, 0) << add.err;
  RunResult as_root = run(init, {"sudo", "-n", "id", "-u"}, session::Identity::kRoot);
  EXPECT_EQ(trim(as_root.out), "0") << as_root.err;  // sudo itself works, for whoever is root already
  RunResult without = run(init, {"sudo", "-n", "id", "-u"}, session::Identity::kAgent);
  EXPECT_NE(without.status, 0);
  EXPECT_NE(without.err.find("no new privileges"), std::string::npos) << without.err;
  RunResult status = run(init, {"cat", "/proc/self/status"}, session::Identity::kAgent);
  EXPECT_EQ(status_field(status.out, "Uid"), "1000\t1000\t1000\t1000");
  EXPECT_EQ(status_field(status.out, "CapBnd"), "0000000000000000");
  EXPECT_EQ(status_field(status.out, "NoNewPrivs"), "1");
}

TEST_F(NsSandboxTest, OnlyTheSandboxsProcessesAreVisible) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  RunResult ls = run(init, {"ls", "/proc"});
  ASSERT_EQ(ls.status, 0) << ls.err;
  std::istringstream in(ls.out);
  std::string entry;
  std::vector<long> pids;
  while (in >> entry) {
    if (entry.find_first_not_of("0123456789") == std::string::npos) pids.push_back(std::stol(entry));
  }
  // PID 1 and `ls` itself; the host has many more.
  EXPECT_EQ(pids.size(), 2U) << ls.out;
  EXPECT_EQ(pids.front(), 1);
  RunResult comm = run(init, {"cat", "/proc/1/comm"});
  EXPECT_EQ(trim(comm.out), "tnk-init");
}

TEST_F(NsSandboxTest, ProjectFilesLandOwnedByTheProjectOwner) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  RunResult owner = run(init, {"stat", "-c", "%u:%g", "/workspace"});
  EXPECT_EQ(trim(owner.out), "1000:1000");
  RunResult write = run(init, {"sh", "-c", "echo hi > /workspace/by-agent && mkdir -p /workspace/d/e"});
  ASSERT_EQ(write.status, 0) << write.err;
  struct stat st {};
  ASSERT_EQ(stat((tmp_ / "project" / "by-agent").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kProjectOwner);
  EXPECT_EQ(st.st_gid, kProjectOwner);
  ASSERT_EQ(stat((tmp_ / "project" / "d" / "e").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kProjectOwner);
  // Only the owner is mapped: root inside cannot create files there (they would have no owner on the host).
  RunResult as_root = run(init, {"sh", "-c", "echo x > /workspace/by-root"}, session::Identity::kRoot);
  EXPECT_NE(as_root.status, 0);
}

TEST_F(NsSandboxTest, RootFilesPersistInTheUpperAcrossRestart) {
  SandboxSpec s = spec();
  pid_t init = start_ok(s);
  ASSERT_GT(init, 0);
  RunResult write = run(init, {"sh", "-c", "echo persisted > /persist.txt && rm /etc/issue"}, session::Identity::kRoot);
  ASSERT_EQ(write.status, 0) << write.err;
  ASSERT_TRUE(stop_sandbox(init).ok());
  struct stat st {};
  ASSERT_EQ(stat((s.upper_dir / "persist.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, s.host_ids.uid);
  // The image tree itself is never written.
  EXPECT_TRUE(std::filesystem::exists(rootfs_ / "etc" / "issue"));
  EXPECT_FALSE(std::filesystem::exists(rootfs_ / "persist.txt"));
  pid_t again = start_ok(s);
  ASSERT_GT(again, 0);
  RunResult read = run(again, {"cat", "/persist.txt"});
  EXPECT_EQ(trim(read.out), "persisted");
  RunResult gone = run(again, {"test", "-e", "/etc/issue"});
  EXPECT_EQ(gone.status, 1);
}

// Security review L5: root's sandboxes map onto root's own range; one made on other ids keeps them.
TEST_F(NsSandboxTest, ASandboxRunsOnItsHostIdsAndKeepsThem) {
  SandboxSpec s = spec();
  EXPECT_EQ(root_sandbox_ids(s.upper_dir).uid, root_ids_for_new_sandbox().uid);  // a new sandbox: root's range
  s.host_ids = {300000, 310000};
  pid_t init = start_ok(s);
  ASSERT_GT(init, 0);
  RunResult write = run(init, {"sh", "-c", "echo x > /by-root && id -u"}, session::Identity::kRoot);
  ASSERT_EQ(write.status, 0) << write.err;
  EXPECT_EQ(trim(write.out), "0");
  ASSERT_TRUE(stop_sandbox(init).ok());
  struct stat st {};
  ASSERT_EQ(stat((s.upper_dir / "by-root").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 300000u);
  EXPECT_EQ(st.st_gid, 310000u);
  HostIds kept = root_sandbox_ids(s.upper_dir);
  EXPECT_EQ(kept.uid, 300000u);
  EXPECT_EQ(kept.gid, 310000u);
}

TEST_F(NsSandboxTest, HostnameHostsAndResolvConfAreGenerated) {
  SandboxSpec s = spec();
  s.hostname = "tnk-box";
  s.resolv_conf = "nameserver 127.0.0.53\n";
  pid_t init = start_ok(s);
  ASSERT_GT(init, 0);
  EXPECT_EQ(trim(run(init, {"cat", "/proc/sys/kernel/hostname"}).out), "tnk-box");
  EXPECT_EQ(run(init, {"cat", "/etc/hosts"}).out, s.etc_hosts);
  EXPECT_EQ(run(init, {"cat", "/etc/resolv.conf"}).out, s.resolv_conf);
  RunResult overwrite = run(init, {"sh", "-c", "echo evil >> /etc/hosts"}, session::Identity::kRoot);
  EXPECT_NE(overwrite.status, 0);
  EXPECT_NE(overwrite.err.find("Read-only"), std::string::npos) << overwrite.err;
}

TEST_F(NsSandboxTest, NetworkNamespaceHasOnlyLoopback) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  RunResult dev = run(init, {"cat", "/proc/net/dev"});
  ASSERT_EQ(dev.status, 0) << dev.err;
  std::istringstream in(dev.out);
  std::string line;
  std::vector<std::string> interfaces;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon != std::string::npos) interfaces.push_back(trim(line.substr(0, colon)));
  }
  EXPECT_EQ(interfaces, std::vector<std::string>{"lo"});
  RunResult up = run(init, {"cat", "/sys/class/net/lo/operstate"});
  EXPECT_NE(trim(up.out), "down") << up.out << up.err;
}

// Bind mounts show their source path below the filesystem's root (field 4), as in every container
// runtime: the project and the generated files do. The image, the overlay directories and the staging
// dir do not: overlay layers are named by /proc/self/fd paths and the staging tmpfs is gone.
TEST_F(NsSandboxTest, MountTableShowsNoImageOrStatePaths) {
  SandboxSpec s = spec();
  pid_t init = start_ok(s);
  ASSERT_GT(init, 0);
  RunResult mounts = run(init, {"cat", "/proc/self/mountinfo"});
  ASSERT_EQ(mounts.status, 0) << mounts.err;
  for (const auto& path : {s.upper_dir, s.work_dir, s.staging_dir, rootfs_}) {
    EXPECT_EQ(mounts.out.find(path.string()), std::string::npos) << path << " in\n" << mounts.out;
  }
  EXPECT_NE(mounts.out.find(" / / "), std::string::npos);
  EXPECT_NE(mounts.out.find("userxattr"), std::string::npos);
  EXPECT_NE(mounts.out.find(" /workspace "), std::string::npos);
  EXPECT_NE(mounts.out.find("idmapped"), std::string::npos);
}

TEST_F(NsSandboxTest, MissingProgramIsNotFoundAndMissingCwdFails) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  SessionSpec s;
  s.request.argv = {"no-such-program-xyz"};
  s.request.env = session_env();
  s.request.cwd = "/workspace";
  auto missing = spawn(running(init), s);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(missing.error().message, "sandbox: no such program: no-such-program-xyz");
  s.request.argv = {"/etc/passwd"};
  auto not_executable = spawn(running(init), s);
  ASSERT_FALSE(not_executable.ok());
  EXPECT_EQ(not_executable.error().kind, ErrorKind::kFailed);
  EXPECT_EQ(not_executable.error().message, "sandbox: cannot execute /etc/passwd: Permission denied");
  s.request.argv = {"true"};
  s.request.cwd = "/no/such/dir";
  auto bad_cwd = spawn(running(init), s);
  ASSERT_FALSE(bad_cwd.ok());
  EXPECT_EQ(bad_cwd.error().message, "sandbox: cannot change to directory /no/such/dir: No such file or directory");
  // A directory agent may not enter: checked with agent's own permissions.
  s.request.cwd = "/root";
  auto denied = spawn(running(init), s);
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.error().message.find("Permission denied"), std::string::npos) << denied.error().message;
}

TEST_F(NsSandboxTest, ScriptsWithoutInterpreterLineRunWithSh) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  std::filesystem::path script = tmp_ / "project" / "script";
  { std::ofstream(script) << "echo from-script \"$1\"\n"; }
  ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  RunResult r = run(init, {"/workspace/script", "arg"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "from-script arg\n");
}

TEST_F(NsSandboxTest, EnvironmentIsExactlyTheGivenOne) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  RunResult env = run(init, {"env"});
  ASSERT_EQ(env.status, 0) << env.err;
  std::string expected;
  for (const auto& kv : session_env()) expected += kv + "\n";
  EXPECT_EQ(env.out, expected);
}

}  // namespace
}  // namespace tnk::ns::testing
