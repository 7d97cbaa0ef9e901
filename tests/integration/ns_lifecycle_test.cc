// The ns engine's lifecycle: sessions that outlive their starter, stop, SIGTERM forwarding, cgroup
// limits, ptys, listening inside, errors before anything starts, and timings.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "backend/ns/joiner.h"
#include "backend/ns/sandbox.h"
#include "core/files.h"
#include "ns_test_util.h"

namespace tnk::ns::testing {
namespace {

std::string read_text(const std::filesystem::path& path) {
  auto text = read_file(path);
  return text.ok() ? trim(*text) : "<unreadable>";
}

// The pid namespace of a host process, as st_ino of /proc/PID/ns/pid (0 when gone).
ino_t pid_namespace(pid_t pid) {
  struct stat st {};
  std::string path = "/proc/" + std::to_string(pid) + "/ns/pid";
  return stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

bool is_zombie(const std::string& pid) {
  std::string stat = read_text("/proc/" + pid + "/stat");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

// Live (non-zombie) host processes whose pid namespace is `ns`. A zombie keeps its pid namespace link
// until its parent reaps it (for an orphan, the host's init: slow on some machines).
int processes_in(ino_t ns) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (pid_namespace(std::stoi(name)) == ns && !is_zombie(name)) ++count;
  }
  return count;
}

class NsLifecycleTest : public NsSandboxTest {
 protected:
  // A session whose output goes nowhere, tracked for TearDown's reaping.
  pid_t spawn_detached(pid_t init, std::vector<std::string> argv,
                       session::Identity identity = session::Identity::kAgent) {
    SessionSpec s;
    s.request.argv = std::move(argv);
    s.request.env = session_env();
    s.request.cwd = "/workspace";
    s.request.identity = identity;
    auto session = spawn(running(init), s);
    EXPECT_TRUE(session.ok()) << (session.ok() ? "" : session.error().message);
    if (!session.ok()) return 0;
    sessions_.insert(session->pid);
    return session->pid;
  }
};

// One joiner serves many sessions; it lives in the sandbox's cgroups (joined once) and ends with its owner.
TEST_F(NsLifecycleTest, OneJoinerStartsManySessions) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  pid_t joiner_pid = 0;
  {
    auto joiner = Joiner::start(running(init));
    ASSERT_TRUE(joiner.ok()) << joiner.error().message;
    joiner_pid = joiner->pid();
    EXPECT_EQ(read_text("/proc/" + std::to_string(joiner_pid) + "/comm"), "tnk-joiner");
    EXPECT_EQ(read_text("/proc/" + std::to_string(joiner_pid) + "/cgroup"),
              read_text("/proc/" + std::to_string(init) + "/cgroup"));
    for (int i = 0; i < 3; ++i) {
      SessionSpec s;
      s.request.argv = {"sh", "-c", "exit " + std::to_string(40 + i)};
      s.request.env = session_env();
      s.request.cwd = "/workspace";
      auto session = joiner->spawn(s);
      ASSERT_TRUE(session.ok()) << session.error().message;
      EXPECT_EQ(wait_status(session->pid), 40 + i);
    }
  }
  EXPECT_NE(::kill(joiner_pid, 0), 0);  // killed and reaped when its owner let go of it
}

TEST_F(NsLifecycleTest, BackgroundProcessSurvivesItsSession) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  RunResult bg = run(init, {"bash", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!"});
  ASSERT_EQ(bg.status, 0) << bg.err;
  std::string pid = trim(bg.out);
  ASSERT_FALSE(pid.empty());
  // The background child may not have exec'ed sleep yet when bash has printed its pid: wait for it.
  RunResult comm = run(init, {"sh", "-c",
                              "for i in $(seq 100); do [ \"$(cat /proc/$1/comm)\" = sleep ] && exit 0; "
                              "sleep 0.05; done; cat /proc/$1/comm; exit 1",
                              "sh", pid});
  EXPECT_EQ(comm.status, 0) << comm.out << comm.err;
  // Reparented to the sandbox's PID 1, which reaps it later.
  RunResult ppid = run(init, {"ps", "-o", "ppid=", "-p", pid});
  EXPECT_EQ(trim(ppid.out), "1") << ppid.err;
}

TEST_F(NsLifecycleTest, StopKillsEverythingAndRemovesTheCgroups) {
  SandboxSpec s = spec();
  pid_t init = start_ok(s);
  ASSERT_GT(init, 0);
  ASSERT_EQ(run(init, {"bash", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 &"}).status, 0);
  pid_t running = spawn_detached(init, {"sleep", "1000"});
  ASSERT_GT(running, 0);
  ino_t ns = pid_namespace(init);
  ASSERT_NE(ns, 0U);
  EXPECT_EQ(processes_in(ns), 3);  // PID 1, the background sleep, the running session
  std::string cgroups = read_text("/proc/" + std::to_string(init) + "/cgroup");
  ASSERT_TRUE(stop_sandbox(init).ok());
  EXPECT_EQ(processes_in(ns), 0);
  EXPECT_EQ(kill(init, 0), -1);
  // The session was killed and reaped through the hook.
  EXPECT_TRUE(sessions_.empty());
  EXPECT_NE(cgroups.find("tnk-" + s.cgroup_name), std::string::npos) << cgroups;
  auto dirs = remove_cgroups(s.cgroup_name);  // nothing left: a no-op
  EXPECT_TRUE(dirs.ok());
  // The directories PID 1 was in are gone. (Not a walk of the hierarchies: other sandboxes' cgroups come
  // and go meanwhile, and a walk fails on one that vanished under it.)
  int checked = 0;
  std::istringstream lines(cgroups);
  for (std::string line; std::getline(lines, line);) {
    auto first = line.find(':'), second = line.find(':', first + 1);
    std::string controller = line.substr(first + 1, second - first - 1);
    if (controller != "memory" && controller != "pids" && controller != "cpu") continue;
    std::string path = line.substr(second + 1);
    if (path.find("tnk-" + s.cgroup_name) == std::string::npos) continue;
    EXPECT_FALSE(std::filesystem::exists("/sys/fs/cgroup/" + controller + path)) << controller << path;
    ++checked;
  }
  EXPECT_GT(checked, 0) << cgroups;
}

// Without a reap hook, stop() reaps the caller's exited sessions of that sandbox itself: the kernel
// keeps PID 1 until they are reaped (regression guard: stop() used to time out after SIGKILL here).
TEST_F(NsLifecycleTest, StopWithoutHookReapsTheSandboxsSessions) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  SessionSpec s;
  s.request.argv = {"sleep", "1000"};
  s.request.env = session_env();
  s.request.cwd = "/";
  auto session = spawn(running(init), s);
  ASSERT_TRUE(session.ok()) << session.error().message;
  started_.erase(init);
  auto started = std::chrono::steady_clock::now();
  Status stopped = stop(init, std::chrono::milliseconds(2000));
  EXPECT_TRUE(stopped.ok()) << stopped.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(1000));
  EXPECT_EQ(waitpid(session->pid, nullptr, WNOHANG), -1);  // already reaped
  EXPECT_EQ(errno, ECHILD);
}

// The statuses of the sessions stop() reaps go back to the supervisor, which tells each client how its
// session ended (before, they were discarded, and every client of a stopped sandbox got "lost the
// connection to the sandbox's supervisor" and wrote no session_exit).
TEST_F(NsLifecycleTest, StopHandsBackTheStatusesOfTheSessionsItReaps) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  SessionSpec s;
  s.request.argv = {"sleep", "1000"};
  s.request.env = session_env();
  s.request.cwd = "/";
  auto session = spawn(running(init), s);
  ASSERT_TRUE(session.ok()) << session.error().message;
  std::vector<ReapedSession> reaped;
  Status stopped = stop(running(init), std::chrono::milliseconds(2000), &reaped);
  started_.erase(init);
  EXPECT_TRUE(stopped.ok()) << stopped.error().message;
  ASSERT_EQ(reaped.size(), 1u);
  EXPECT_EQ(reaped[0].pid, session->pid);
  EXPECT_TRUE(WIFSIGNALED(reaped[0].wait_status));
  EXPECT_EQ(WTERMSIG(reaped[0].wait_status), SIGTERM);  // PID 1 forwarded the stop's SIGTERM
}

TEST_F(NsLifecycleTest, StopForwardsSigtermToEveryProcess) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  pid_t session = spawn_detached(init, {"bash", "-c",
                                        "trap 'echo term > /workspace/got-term; exit 0' TERM; "
                                        "sleep 1000 & wait"});
  ASSERT_GT(session, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let bash install its trap
  auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(stop_sandbox(init).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(1500));
  EXPECT_EQ(read_text(tmp_ / "project" / "got-term"), "term");
}

TEST_F(NsLifecycleTest, LimitsLandInTheSandboxsCgroups) {
  SandboxSpec s = spec();
  s.limits.memory_bytes = 64ULL << 20;
  s.limits.pids = 40;
  s.limits.cpus = 0.5;
  pid_t init = start_ok(s);
  ASSERT_GT(init, 0);
  for (const auto& note : notes_) std::printf("note: %s\n", note.c_str());
  auto dirs_for = [&](pid_t pid) { return read_text("/proc/" + std::to_string(pid) + "/cgroup"); };
  std::string init_cgroups = dirs_for(init);
  if (init_cgroups.find("tnk-" + s.cgroup_name) == std::string::npos) {
    TNK_NS_SKIP("no cgroup could be created here; the notes above say why");
  }
  pid_t session = spawn_detached(init, {"sleep", "1000"});
  EXPECT_EQ(dirs_for(session), init_cgroups);
  // On this kind of host (cgroup v1 with our own memory cgroup): the limits as written.
  std::istringstream lines(init_cgroups);
  std::string line;
  while (std::getline(lines, line)) {
    size_t at = line.find(":/");
    std::string controllers = line.substr(line.find(':') + 1, at - line.find(':') - 1);
    std::string dir = "/sys/fs/cgroup/" + controllers + line.substr(at + 1);
    if (controllers == "memory") {
      EXPECT_EQ(read_text(dir + "/memory.limit_in_bytes"), "67108864");
    }
    if (controllers == "pids") {
      EXPECT_EQ(read_text(dir + "/pids.max"), "40");
    }
    if (controllers == "cpu") {
      EXPECT_EQ(read_text(dir + "/cpu.cfs_quota_us"), "50000");
    }
  }
#if defined(__SANITIZE_ADDRESS__)
  // Under ASan, PID 1 (a fork of this test) allocates through ASan's allocator and dies when the
  // cgroup is full, which is not what is tested here; tests/e2e/test_ns_limits.py checks the memory
  // limit through the real (uninstrumented) tnk binary.
#else
  // The memory limit holds: `tail -n 1` keeps a newline-free 300 MB "line" in memory.
  RunResult hog = run(init, {"bash", "-c", "set -o pipefail; head -c 300M /dev/zero | tail -n 1 | wc -c"});
  EXPECT_EQ(hog.status, 137) << hog.out << hog.err;  // tail was OOM-killed
#endif
  // The pids limit holds: 60 sleepers do not fit in 40.
  RunResult forks = run(init, {"sh", "-c", "i=0; while [ $i -lt 60 ]; do sleep 1 & i=$((i+1)); done; wait"});
  EXPECT_NE(forks.err.find("fork"), std::string::npos) << forks.err;
}

TEST_F(NsLifecycleTest, PtySessionHasAControllingTerminalOwnedByAgent) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  SessionSpec s;
  s.request.argv = {"sh", "-c", "tty; stat -c '%u %g %a' $(tty); stty size; ps -o sid=,pgid=,pid= -p $$"};
  s.request.env = session_env();
  s.request.cwd = "/workspace";
  s.request.tty = true;
  s.request.rows = 33;
  s.request.cols = 101;
  auto session = spawn(running(init), s);
  ASSERT_TRUE(session.ok()) << session.error().message;
  ASSERT_TRUE(session->pty_master.valid());
  EXPECT_EQ(fcntl(session->pty_master.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  std::string out;
  for (;;) {
    pollfd pfd{session->pty_master.get(), POLLIN, 0};
    if (poll(&pfd, 1, 10000) <= 0) break;
    char buf[1024];
    ssize_t n = read(session->pty_master.get(), buf, sizeof(buf));
    if (n <= 0) break;  // EIO once the last slave fd is closed
    out.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(wait_status(session->pid), 0);
  EXPECT_NE(out.find("/dev/pts/0\r\n1000 5 620\r\n33 101\r\n"), std::string::npos) << out;
  // Session leader and process group leader: sid == pgid == pid.
  std::istringstream ids(out.substr(out.rfind("101\r\n") + 5));
  std::string sid, pgid, pid;
  ids >> sid >> pgid >> pid;
  EXPECT_EQ(sid, pid);
  EXPECT_EQ(pgid, pid);
}

TEST_F(NsLifecycleTest, ListenInsideAcceptsConnectionsFromTheSandbox) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  auto listener = listen_inside(running(init), 9931);
  ASSERT_TRUE(listener.ok()) << listener.error().message;
  EXPECT_EQ(fcntl(listener->get(), F_GETFL) & O_NONBLOCK, O_NONBLOCK);
  EXPECT_EQ(fcntl(listener->get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  RunResult client = run(init, {"bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9931 && echo hello >&3"});
  EXPECT_EQ(client.status, 0) << client.err;
  pollfd pfd{listener->get(), POLLIN, 0};
  ASSERT_EQ(poll(&pfd, 1, 5000), 1);
  UniqueFd conn(accept4(listener->get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(conn.valid());
  char buf[16] = {};
  EXPECT_EQ(read(conn.get(), buf, sizeof(buf)), 6);
  EXPECT_STREQ(buf, "hello\n");
  // The pair: a port nobody listens on inside is refused, whatever listens on the host.
  RunResult refused = run(init, {"bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9932"});
  EXPECT_NE(refused.status, 0);
  auto again = listen_inside(running(init), 9931);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("Address already in use"), std::string::npos) << again.error().message;
}

TEST_F(NsLifecycleTest, InitDiesWithTheCaller) {
  // A stand-in supervisor (a forked copy of this test) starts a sandbox, reports PID 1, then is killed.
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  UniqueFd reader(fds[0]), writer(fds[1]);
  SandboxSpec s = spec();
  pid_t supervisor = fork();
  if (supervisor == 0) {
    auto sandbox = start(s);
    pid_t init = sandbox.ok() ? sandbox->init_pid : 0;
    (void)!write(writer.get(), &init, sizeof(init));
    pause();
    _exit(0);
  }
  writer.reset();
  pid_t init = 0;
  ASSERT_EQ(read(reader.get(), &init, sizeof(init)), static_cast<ssize_t>(sizeof(init)));
  ASSERT_GT(init, 0);
  ino_t ns = pid_namespace(init);
  ASSERT_NE(ns, 0U);
  kill(supervisor, SIGKILL);
  wait_status(supervisor);
  for (int i = 0; i < 200 && processes_in(ns) > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(processes_in(ns), 0);
  (void)remove_cgroups(s.cgroup_name);
}

TEST_F(NsLifecycleTest, InitHoldsNoCallerFdsAndItsMemoryIsNotReadable) {
  // A descriptor this process forgot to mark CLOEXEC: PID 1 (which never execs) must still drop it.
  UniqueFd leaked(open("/etc/hostname", O_RDONLY));
  ASSERT_TRUE(leaked.valid());
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  std::vector<std::string> fds;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(init) + "/fd")) {
    fds.push_back(entry.path().filename());
  }
  std::sort(fds.begin(), fds.end());
  EXPECT_EQ(fds, (std::vector<std::string>{"0", "1", "2"}));
  RunResult session_fds = run(init, {"ls", "/proc/self/fd"});
  EXPECT_EQ(session_fds.out, "0\n1\n2\n3\n");  // 3 is ls's own directory
  // PID 1 is a copy of the supervisor: not even the sandbox's root may read its environment or memory.
  RunResult environ = run(init, {"cat", "/proc/1/environ"}, session::Identity::kRoot);
  EXPECT_NE(environ.status, 0);
  EXPECT_NE(environ.err.find("Permission denied"), std::string::npos) << environ.err;
}

TEST_F(NsLifecycleTest, SpawnOnAStoppedSandboxIsNotFound) {
  pid_t init = start_ok(spec());
  ASSERT_GT(init, 0);
  ASSERT_TRUE(stop(init, std::chrono::milliseconds(2000)).ok());  // its handle (running(init)) stays
  SessionSpec s;
  s.request.argv = {"true"};
  s.request.cwd = "/";
  auto session = spawn(running(init), s);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(session.error().message.find("is not running"), std::string::npos);
}

TEST_F(NsLifecycleTest, BadSpecsFailBeforeAnythingStarts) {
  SandboxSpec s = spec();
  s.mount_point = "/proc/x";
  auto bad_mount = start(s);
  ASSERT_FALSE(bad_mount.ok());
  EXPECT_EQ(bad_mount.error().kind, ErrorKind::kUsage);
  s = spec();
  s.image_root = tmp_ / "no-image";
  auto no_image = start(s);
  ASSERT_FALSE(no_image.ok());
  EXPECT_EQ(no_image.error().kind, ErrorKind::kNotFound);
  s = spec();
  s.cgroup_name = "../escape";
  EXPECT_EQ(start(s).error().kind, ErrorKind::kUsage);
  // A staging dir below a directory only its (non-root) owner may enter: named, with a hint.
  s = spec();
  std::filesystem::create_directories(tmp_ / "private" / "state");
  ASSERT_EQ(chown((tmp_ / "private").c_str(), 4321, 4321), 0);
  ASSERT_EQ(chmod((tmp_ / "private").c_str(), 0700), 0);
  s.staging_dir = tmp_ / "private" / "state" / "staging";
  auto hidden = start(s);
  ASSERT_FALSE(hidden.ok());
  EXPECT_EQ(hidden.error().message, "opening the staging directory " + s.staging_dir.string() + ": Permission denied");
  EXPECT_FALSE(hidden.error().hint.empty());
}

// p-th percentile (0..100) of the samples, nearest rank.
double percentile_ms(std::vector<double> samples, int p) {
  std::sort(samples.begin(), samples.end());
  size_t rank = (samples.size() - 1) * static_cast<size_t>(p) / 100;
  return samples[rank];
}

std::string summary(const std::vector<double>& samples) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "median %.1f ms (p10 %.1f, p90 %.1f)", percentile_ms(samples, 50),
                percentile_ms(samples, 10), percentile_ms(samples, 90));
  return buf;
}

double since_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Not a pass/fail check: prints the numbers the design asks for (20 runs each).
TEST_F(NsLifecycleTest, Timings) {
  SandboxSpec s = spec();
  std::vector<double> starts, stops, spawns;
  pid_t init = 0;
  for (int i = 0; i < 20; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    init = start_ok(s);
    starts.push_back(since_ms(t0));
    ASSERT_GT(init, 0);
    if (i + 1 == 20) break;
    t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(stop_sandbox(init).ok());
    stops.push_back(since_ms(t0));
  }
  for (int i = 0; i < 20; ++i) {
    SessionSpec t;
    t.request.argv = {"true"};
    t.request.env = session_env();
    t.request.cwd = "/";
    auto t0 = std::chrono::steady_clock::now();
    auto session = spawn(running(init), t);
    ASSERT_TRUE(session.ok()) << session.error().message;
    EXPECT_EQ(wait_status(session->pid), 0);
    spawns.push_back(since_ms(t0));
  }
  std::printf("ns timings over 20 runs: start %s; spawn+wait `true` %s; stop %s\n", summary(starts).c_str(),
              summary(spawns).c_str(), summary(stops).c_str());
  RecordProperty("start_median_ms", std::to_string(percentile_ms(starts, 50)));
  RecordProperty("spawn_true_median_ms", std::to_string(percentile_ms(spawns, 50)));
}

}  // namespace
}  // namespace tnk::ns::testing
