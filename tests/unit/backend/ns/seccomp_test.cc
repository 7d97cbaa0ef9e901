// The seccomp filter: built and loaded in a forked child (paired with the same calls unfiltered), and
// seen from inside a sandbox by a small static probe program run from the project directory.
#include <gtest/gtest.h>
#include <linux/personality.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/seccomp.h>
#include <seccomp.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "backend/ns/seccomp.h"
#include "child_calls.h"
#include "confine/setid_filter.h"
#include "core/files.h"
#include "core/subprocess.h"
#include "ns_test_util.h"

namespace tnk::ns::testing {
namespace {

TEST(NsSeccompTest, FilterBuildsAndNamesTheRequiredSyscalls) {
  auto filter = build_seccomp_filter();
  ASSERT_TRUE(filter.ok()) << filter.error().message;
  EXPECT_GT(filter->size(), 20U);
  const auto& denied = seccomp_denied_syscalls();
  for (const char* name : {"keyctl",
                           "add_key",
                           "request_key",
                           "bpf",
                           "userfaultfd",
                           "perf_event_open",
                           "kexec_load",
                           "kexec_file_load",
                           "init_module",
                           "finit_module",
                           "delete_module",
                           "mount",
                           "umount2",
                           "pivot_root",
                           "move_mount",
                           "open_tree",
                           "fsopen",
                           "fsmount",
                           "fsconfig",
                           "fspick",
                           "mount_setattr",
                           "unshare",
                           "setns",
                           "swapon",
                           "swapoff",
                           "reboot",
                           "syslog",
                           "acct",
                           "quotactl",
                           "open_by_handle_at",
                           "name_to_handle_at",
                           "iopl",
                           "ioperm"}) {
    EXPECT_NE(std::find_if(denied.begin(), denied.end(), [&](const char* d) { return std::strcmp(d, name) == 0; }),
              denied.end())
        << name;
  }
}

// A classic-BPF interpreter for the instructions seccomp filters use, to ask the filter about calls this
// machine's kernel cannot make (numbers newer than it). nullopt for an instruction it does not know.
std::optional<uint32_t> evaluate(const std::vector<sock_filter>& prog, const seccomp_data& data) {
  uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {};
  const auto* bytes = reinterpret_cast<const unsigned char*>(&data);
  for (std::size_t pc = 0; pc < prog.size(); ++pc) {
    const sock_filter& in = prog[pc];
    switch (in.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (in.k + 4 > sizeof data) return std::nullopt;
        std::memcpy(&a, bytes + in.k, 4);
        break;
      case BPF_LD | BPF_IMM: a = in.k; break;
      case BPF_LD | BPF_MEM: a = mem[in.k % BPF_MEMWORDS]; break;
      case BPF_LDX | BPF_MEM: x = mem[in.k % BPF_MEMWORDS]; break;
      case BPF_ST: mem[in.k % BPF_MEMWORDS] = a; break;
      case BPF_STX: mem[in.k % BPF_MEMWORDS] = x; break;
      case BPF_ALU | BPF_AND | BPF_K: a &= in.k; break;
      case BPF_MISC | BPF_TAX: x = a; break;
      case BPF_MISC | BPF_TXA: a = x; break;
      case BPF_JMP | BPF_JA: pc += in.k; break;
      case BPF_JMP | BPF_JEQ | BPF_K: pc += a == in.k ? in.jt : in.jf; break;
      case BPF_JMP | BPF_JGT | BPF_K: pc += a > in.k ? in.jt : in.jf; break;
      case BPF_JMP | BPF_JGE | BPF_K: pc += a >= in.k ? in.jt : in.jf; break;
      case BPF_JMP | BPF_JSET | BPF_K: pc += (a & in.k) != 0 ? in.jt : in.jf; break;
      case BPF_RET | BPF_K: return in.k;
      case BPF_RET | BPF_A: return a;
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}

TEST(NsSeccompTest, CallsNewerThanTheFilterAnswerEnosysAndKnownOnesAreJudgedAsBefore) {
  auto filter = build_seccomp_filter();
  ASSERT_TRUE(filter.ok()) << filter.error().message;
  auto verdict = [&](uint32_t nr, uint64_t arg0 = 0, uint64_t arg1 = 0) {
    seccomp_data data{};
    data.nr = static_cast<int>(nr);
    data.arch = seccomp_arch_native();
    data.args[0] = arg0;
    data.args[1] = arg1;
    return evaluate(*filter, data);
  };
  const uint32_t enosys = SECCOMP_RET_ERRNO | ENOSYS, eperm = SECCOMP_RET_ERRNO | EPERM;
  // Security review L4: a call the filter has never seen is not let through. 451 is cachestat (6.5),
  // 457/458 statmount/listmount (6.8), 467 open_tree_attr (6.15); this machine's kernel has none of them.
  for (uint32_t newer : {451U, 457U, 458U, 467U, 1000U}) EXPECT_EQ(verdict(newer), enosys) << newer;
  EXPECT_EQ(verdict(SYS_getpid), SECCOMP_RET_ALLOW);
  EXPECT_EQ(verdict(SYS_set_mempolicy_home_node), SECCOMP_RET_ALLOW);  // 450, the newest reviewed
  EXPECT_EQ(verdict(SYS_keyctl), eperm);
  EXPECT_EQ(verdict(SYS_modify_ldt), eperm);
  EXPECT_EQ(verdict(SYS_ioctl, 0, TIOCSETD), eperm);
  EXPECT_EQ(verdict(SYS_ioctl, 0, TCGETS), SECCOMP_RET_ALLOW);
  EXPECT_EQ(verdict(SYS_personality, 0xffffffffUL), SECCOMP_RET_ALLOW);
  EXPECT_EQ(verdict(SYS_socket, AF_VSOCK), SECCOMP_RET_ERRNO | EAFNOSUPPORT);
}

// Runs a few calls in a forked child, with or without the filter; returns "name=errno-name|ok" lines.
std::map<std::string, std::string> calls_in(bool filtered) {
  auto filter = build_seccomp_filter();
  if (!filter.ok()) return {};
  return testing_support::calls_in_child([&](const testing_support::ShowCall& show) {
    if (filtered && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || confine::load_seccomp_program(*filter) != 0))
      _exit(2);
    char c = 'x';
    show("keyctl", syscall(SYS_keyctl, 0, -3, 0));
    show("personality_bad", syscall(SYS_personality, READ_IMPLIES_EXEC));
    show("personality_query", syscall(SYS_personality, 0xffffffffUL));
    show("clone3", syscall(SYS_clone3, nullptr, 0));
    show("tiocsti_high", syscall(SYS_ioctl, 0, 0x100000000UL | TIOCSTI, &c));
    show("socket_vsock", socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0));
    show("socket_vsock_high", syscall(SYS_socket, 0x100000000UL | AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0));
    show("socket_unknown_family", socket(AF_MAX + 7, SOCK_STREAM | SOCK_CLOEXEC, 0));
    show("socket_inet", socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    show("socket_netlink", socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0));
    long child = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    if (child == 0) _exit(0);
    if (child > 0) waitpid(static_cast<pid_t>(child), nullptr, 0);
    show("clone_newuser", child);
    show("unshare", syscall(SYS_unshare, CLONE_NEWUSER));  // last: it moves this process
  });
}

TEST(NsSeccompTest, FilterRefusesWhatItShouldAndOnlyThat) {
  auto filtered = calls_in(true);
  auto plain = calls_in(false);
  ASSERT_FALSE(filtered.empty());
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(filtered["keyctl"], "EPERM");
  EXPECT_EQ(filtered["personality_bad"], "EPERM");
  EXPECT_EQ(filtered["personality_query"], "ok");
  EXPECT_EQ(filtered["clone3"], "ENOSYS");
  EXPECT_EQ(filtered["tiocsti_high"], "EPERM");  // the request is compared on its low 32 bits
  EXPECT_EQ(filtered["unshare"], "EPERM");
  EXPECT_EQ(filtered["clone_newuser"], "EPERM");
  EXPECT_EQ(filtered["socket_vsock"], "EAFNOSUPPORT");
  EXPECT_EQ(filtered["socket_vsock_high"], "EAFNOSUPPORT");  // the family is compared on its low 32 bits
  EXPECT_EQ(filtered["socket_inet"], "ok");
  EXPECT_EQ(filtered["socket_netlink"], "ok");
  // The pair: without the filter none of these is refused with the filter's answers.
  EXPECT_NE(plain["keyctl"], "EPERM");
  EXPECT_EQ(plain["personality_bad"], "ok");
  EXPECT_NE(plain["clone3"], "ENOSYS");
  EXPECT_NE(plain["tiocsti_high"], "EPERM");  // stdin is not a tty here: ENOTTY
  EXPECT_EQ(plain["unshare"], "ok");
  EXPECT_EQ(plain["clone_newuser"], "ok");
  EXPECT_EQ(plain["socket_inet"], "ok");
  EXPECT_EQ(filtered["socket_unknown_family"], "EAFNOSUPPORT");
  EXPECT_EQ(plain["socket_unknown_family"], "EAFNOSUPPORT");  // the kernel's own answer, matched
}

constexpr const char* kProbeSource = R"(#define _GNU_SOURCE
#include <errno.h>
#include <linux/personality.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
static void show(const char* what, long rc) { printf("%s=%s\n", what, rc < 0 ? strerrorname_np(errno) : "ok"); }
static long clone_flags(unsigned long flags) {
  long pid = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid(pid, 0, 0);
  return pid;
}
int main(int argc, char** argv) {
  char c = 'x';
  struct winsize ws;
  show("tiocgwinsz", ioctl(0, TIOCGWINSZ, &ws));
  show("tiocsti", ioctl(0, TIOCSTI, &c));
  show("tiocsti_high", syscall(SYS_ioctl, 0, 0x100000000UL | TIOCSTI, &c));
  show("tioclinux", ioctl(0, TIOCLINUX, &c));
  show("clone_newns", clone_flags(CLONE_NEWNS));
  show("clone_plain", clone_flags(0));
  show("clone3", syscall(SYS_clone3, NULL, 0));
  show("keyctl", syscall(SYS_keyctl, 0, -3, 0));
  show("bpf", syscall(SYS_bpf, 0, NULL, 0));
  show("userfaultfd", syscall(SYS_userfaultfd, 0));
  show("personality_query", personality(0xffffffff));
  show("personality_bad", personality(READ_IMPLIES_EXEC));
  if (argc < 2 || strcmp(argv[1], "host") != 0) show("mount", mount("none", "/tmp", "tmpfs", 0, NULL));
  show("clone_newuser", clone_flags(CLONE_NEWUSER));
  show("unshare", unshare(CLONE_NEWUSER));
  return 0;
}
)";

std::map<std::string, std::string> parse_probe(const std::string& text) {
  std::map<std::string, std::string> results;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t eq = line.find('=');
    if (eq != std::string::npos) results[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return results;
}

ProcessOptions captured() {
  ProcessOptions options;
  options.capture_stdout = true;
  options.capture_stderr = true;
  return options;
}

class NsSeccompSandboxTest : public NsSandboxTest {
 protected:
  // Compiles the probe statically into the project (runnable inside: no libraries needed).
  bool build_probe() {
    std::filesystem::path src = tmp_ / "probe.c";
    if (!write_file_atomic(src, kProbeSource, 0644).ok()) return false;
    auto cc =
        run_process({"cc", "-static", "-O1", "-o", (tmp_ / "project" / "probe").string(), src.string()}, captured());
    if (!cc.ok() || cc->exit_code != 0) return false;
    return chown((tmp_ / "project" / "probe").c_str(), kProjectOwner, kProjectOwner) == 0;
  }

  std::string run_probe_on_tty(pid_t init, session::Identity identity) {
    SessionSpec s;
    s.request.argv = {"/workspace/probe"};
    s.request.env = session_env();
    s.request.cwd = "/workspace";
    s.request.identity = identity;
    s.request.tty = true;
    auto session = spawn(running(init), s);
    if (!session.ok()) return "spawn failed: " + session.error().message;
    std::string out;
    char buf[1024];
    for (;;) {
      pollfd pfd{session->pty_master.get(), POLLIN, 0};
      if (poll(&pfd, 1, 10000) <= 0) break;
      ssize_t n = read(session->pty_master.get(), buf, sizeof(buf));
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    wait_status(session->pid);
    return out;
  }
};

TEST_F(NsSeccompSandboxTest, ProbeInsideIsRefusedAndTheSameProbeOnTheHostIsNot) {
  if (!build_probe()) TNK_NS_SKIP("cannot build the static probe (needs cc and libc.a)");
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  for (session::Identity identity : {session::Identity::kAgent, session::Identity::kRoot}) {
    auto inside = parse_probe(run_probe_on_tty(init, identity));
    SCOPED_TRACE(identity == session::Identity::kAgent ? "agent" : "root");
    EXPECT_EQ(inside["tiocgwinsz"], "ok");  // stdin is the session's tty...
    EXPECT_EQ(inside["tiocsti"], "EPERM");  // ...but nothing can be pushed into its input
    EXPECT_EQ(inside["tiocsti_high"], "EPERM");
    EXPECT_EQ(inside["tioclinux"], "EPERM");
    EXPECT_EQ(inside["clone_newns"], "EPERM");
    EXPECT_EQ(inside["clone_plain"], "ok");
    EXPECT_EQ(inside["clone3"], "ENOSYS");
    EXPECT_EQ(inside["keyctl"], "EPERM");
    EXPECT_EQ(inside["bpf"], "EPERM");
    EXPECT_EQ(inside["userfaultfd"], "EPERM");
    EXPECT_EQ(inside["personality_query"], "ok");
    EXPECT_EQ(inside["personality_bad"], "EPERM");
    EXPECT_EQ(inside["mount"], "EPERM");
    EXPECT_EQ(inside["unshare"], "EPERM");
    EXPECT_EQ(inside["clone_newuser"], "EPERM");
  }
  // The pair: the same binary on the host, unfiltered.
  auto host_run = run_process({(tmp_ / "project" / "probe").string(), "host"}, captured());
  ASSERT_TRUE(host_run.ok());
  auto host = parse_probe(host_run->out);
  EXPECT_EQ(host["clone_newns"], "ok");
  EXPECT_NE(host["clone3"], "ENOSYS");
  EXPECT_EQ(host["personality_bad"], "ok");
  EXPECT_EQ(host["unshare"], "ok");
  EXPECT_EQ(host["clone_newuser"], "ok");
}

}  // namespace
}  // namespace tnk::ns::testing
