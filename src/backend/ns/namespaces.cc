#include "backend/ns/namespaces.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/files.h"

#include "linux/cgroups.h"
#include "linux/syscalls.h"

namespace tnk::ns {
namespace {

constexpr std::array<const char*, kNsCount> kProcNames = {"user", "mnt",   "pid_for_children", "net", "ipc",
                                                          "uts",  "cgroup"};
constexpr std::array<int, kNsCount> kCloneFlags = {CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,   CLONE_NEWNET,
                                                   CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP};
// Not the pid namespace: its handle can be opened only once it has a first process (namespaces.h).
constexpr int kOtherNamespaces = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;

// The holder's stages; it reports each one with 0 or the errno that failed it (and a pid for the last).
enum Stage : int { kJoinCgroups, kUserNamespace, kOthers, kRootSession };
struct Said {
  int stage = 0;
  int err = 0;
  pid_t pid = 0;
};

bool say(int fd, Stage stage, int err, pid_t pid = 0) {
  Said said{stage, err, pid};
  return write(fd, &said, sizeof(said)) == sizeof(said);
}

bool wait_go(int fd) {
  char byte;
  ssize_t n;
  while ((n = read(fd, &byte, 1)) < 0 && errno == EINTR) {
  }
  return n == 1;
}

// The root sessions' namespace (namespaces.h), made by a second holder: as the sandbox's root (so that
// root sessions own it), and dumpable again (a change of ids clears it) so that we may write its maps
// and the caller may open it. No process of the new sandbox exists yet to look at either.
int make_root_session_namespace(pid_t* nested) {
  if (setgroups(0, nullptr) != 0 || setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0) return errno;
  if (prctl(PR_SET_DUMPABLE, 1) != 0) return errno;
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return errno;
  pid_t child = fork();
  if (child < 0) return errno;
  if (child == 0) {
    char byte = unshare(CLONE_NEWUSER) == 0 ? 0 : 1;
    (void)!write(ready[1], &byte, 1);
    pause();  // until the holder kills it
    _exit(0);
  }
  close(ready[1]);
  *nested = child;
  char byte = 1;
  if (read(ready[0], &byte, 1) != 1 || byte != 0) return EPERM;
  close(ready[0]);
  const std::string map = idmap::proc_map_text(idmap::agentless_map(idmap::kAgentId));
  for (const char* file : {"uid_map", "gid_map"}) {
    Status written = write_kernel_file("/proc/" + std::to_string(child) + "/" + file, map);
    if (!written.ok()) return written.error().sys_errno != 0 ? written.error().sys_errno : EIO;
  }
  return 0;
}

[[noreturn]] void hold(int report, int go, const std::vector<int>& cgroup_procs_fds) {
  if (int err = linux::join_cgroups(cgroup_procs_fds); err != 0) {
    say(report, kJoinCgroups, err);
    _exit(1);
  }
  if (!say(report, kUserNamespace, unshare(CLONE_NEWUSER) == 0 ? 0 : errno)) _exit(1);
  if (!wait_go(go)) _exit(0);  // the maps could not be written: the caller gave up
  if (!say(report, kOthers, unshare(kOtherNamespaces) == 0 ? 0 : errno)) _exit(1);
  pid_t nested = 0;
  if (wait_go(go)) {
    int err = make_root_session_namespace(&nested);
    say(report, kRootSession, err, nested);
  }
  wait_go(go);  // EOF: the caller has the fds
  if (nested > 0) {
    kill(nested, SIGKILL);
    waitpid(nested, nullptr, 0);
  }
  _exit(0);
}

// The holder's next report: ok, or the error of the stage that failed.
Result<Said> hear(int fd) {
  Said said;
  ssize_t n;
  while ((n = read(fd, &said, sizeof(said))) < 0 && errno == EINTR) {
  }
  if (n != sizeof(said)) return failed("the process creating the sandbox's namespaces exited early");
  if (said.err == 0) return said;
  switch (said.stage) {
    case kJoinCgroups: return sys_error(said.err, "joining the sandbox's cgroups");
    case kUserNamespace:
      return permission_denied("creating the sandbox's user namespace: " + std::string(std::strerror(said.err)),
                               "user namespaces are disabled or restricted on this host; run `tnk doctor`");
    case kOthers: return sys_error(said.err, "creating the sandbox's mount, network, ipc, uts and cgroup namespaces");
    default: return sys_error(said.err, "creating the user namespace of the sandbox's root sessions");
  }
}

Status heard(int fd) {
  auto said = hear(fd);
  if (!said) return said.error();
  return ok_status();
}

Status open_ns(pid_t pid, const char* name, UniqueFd& fd) {
  std::string path = "/proc/" + std::to_string(pid) + "/ns/" + name;
  fd.reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, "opening " + path);
  return ok_status();
}

Status run_holder_protocol(pid_t holder, int report, int go, const idmap::UsernsMaps& maps, Namespaces& out) {
  TNK_RETURN_IF_ERROR(heard(report));
  TNK_RETURN_IF_ERROR(idmap::write_maps(holder, maps));
  if (write(go, "g", 1) != 1) return sys_error(errno, "resuming the namespace holder");
  TNK_RETURN_IF_ERROR(heard(report));
  for (size_t i = 0; i < kNsCount; ++i) {
    if (i != kPidNs) TNK_RETURN_IF_ERROR(open_ns(holder, kProcNames[i], out.fds[i]));
  }
  if (write(go, "g", 1) != 1) return sys_error(errno, "resuming the namespace holder");
  TNK_ASSIGN_OR_RETURN(Said said, hear(report));
  return open_ns(said.pid, "user", out.root_session_user);
}

}  // namespace

int ns_clone_flag(NsIndex index) { return kCloneFlags[index]; }

Result<Namespaces> create_namespaces(const idmap::UsernsMaps& maps, const std::vector<int>& cgroup_procs_fds) {
  TNK_ASSIGN_OR_RETURN(Pipe report, make_pipe());
  TNK_ASSIGN_OR_RETURN(Pipe go, make_pipe());
  pid_t holder = fork();
  if (holder < 0) return sys_error(errno, "forking to create the sandbox's namespaces");
  if (holder == 0) {
    report.read_end.reset();
    go.write_end.reset();  // else the holder would never see EOF on `go`
    hold(report.write_end.get(), go.read_end.get(), cgroup_procs_fds);
  }
  report.write_end.reset();
  go.read_end.reset();
  Namespaces out;
  Status status = run_holder_protocol(holder, report.read_end.get(), go.write_end.get(), maps, out);
  if (!status.ok()) kill(holder, SIGKILL);
  go.write_end.reset();  // EOF: the holder ends its own child and exits
  linux::sys::wait_for(holder);
  if (!status.ok()) return std::move(status).error();
  return out;
}

}  // namespace tnk::ns
