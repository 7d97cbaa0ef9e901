#include "idmap/userns.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/files.h"
#include "core/subprocess.h"

namespace tnk::idmap {
namespace {

constexpr const char* kHelperDirs[] = {"/usr/bin", "/bin", "/usr/sbin", "/sbin"};

void reap(pid_t pid) {
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

Status apply_map(pid_t pid, const char* helper, const char* file, const IdMap& map, bool via_helpers) {
  if (!via_helpers) return write_kernel_file("/proc/" + std::to_string(pid) + "/" + file, proc_map_text(map));
  TNK_ASSIGN_OR_RETURN(std::string program, find_map_helper(helper));
  std::vector<std::string> argv{program, std::to_string(pid)};
  for (auto& arg : helper_args(map)) argv.push_back(std::move(arg));
  ProcessOptions options;
  options.capture_stdout = true;
  options.capture_stderr = true;
  options.cwd = "/";
  options.timeout = std::chrono::seconds(30);
  TNK_ASSIGN_OR_RETURN(ProcessResult result, run_process(argv, options));
  if (result.exit_code == 0) return ok_status();
  std::string why = result.err;
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  return permission_denied(std::string(helper) + " refused the sandbox's map (" +
                               (why.empty() ? "exit " + std::to_string(result.exit_code) : why) + ")",
                           "check the user's ranges in /etc/subuid and /etc/subgid; run `tnk doctor`");
}

// The child holds a new user namespace until the parent closes `release`.
// `release_write` is the fork's copy of the parent's end: closed at once, so that the read below ends
// when the parent does, even when it was killed before it could release the holder (found by the fault
// injector: a `delete` killed 20 ms in left this process blocked for ever, holding the CLI's output).
// After fork: writes `text` to `path` in one write; 0 or errno.
int write_whole(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0 : errno;
  ::close(fd);
  return err;
}

// The maps of `pid`'s namespace, made inside `parent`: the kernel takes them only from a process in that
// namespace or in its parent, so a child of this process enters `parent` (where, its owner, it holds
// every capability) and writes them there.
Status write_maps_inside(int parent, pid_t pid, const UsernsMaps& maps) {
  const std::string uid_path = "/proc/" + std::to_string(pid) + "/uid_map";
  const std::string gid_path = "/proc/" + std::to_string(pid) + "/gid_map";
  const std::string uid_text = proc_map_text(maps.uid), gid_text = proc_map_text(maps.gid);
  pid_t writer = fork();
  if (writer < 0) return sys_error(errno, "forking to write a user namespace's maps");
  if (writer == 0) {
    int err = setns(parent, CLONE_NEWUSER) == 0 ? 0 : errno;
    if (err == 0) err = write_whole(uid_path.c_str(), uid_text);
    if (err == 0) err = write_whole(gid_path.c_str(), gid_text);
    _exit(err);
  }
  int status = 0;
  while (waitpid(writer, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ok_status();
  return sys_error(
      WIFEXITED(status) ? WEXITSTATUS(status) : EIO,
      "writing \"" + uid_text.substr(0, uid_text.size() - 1) + "\" as the maps of a nested user namespace");
}

[[noreturn]] void hold_namespace(int parent, int ready, int release, int release_write) {
  ::close(release_write);
  bool made = (parent < 0 || setns(parent, CLONE_NEWUSER) == 0) && unshare(CLONE_NEWUSER) == 0;
  char byte = made ? 0 : static_cast<char>(errno);
  if (write(ready, &byte, 1) != 1 || byte != 0) _exit(1);
  while (read(release, &byte, 1) < 0 && errno == EINTR) {
  }
  _exit(0);
}

}  // namespace

Result<RootlessIds> rootless_ids() {
  RootlessIds ids;
  ids.uid = geteuid();
  ids.gid = getegid();
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(ids.uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return permission_denied("uid " + std::to_string(ids.uid) + " has no entry in the user database",
                             "a rootless sandbox needs a named user with ranges in /etc/subuid");
  }
  ids.name = pw.pw_name;
  TNK_ASSIGN_OR_RETURN(ids.uids, read_range(kSubuidFile, ids.name, ids.uid));
  TNK_ASSIGN_OR_RETURN(ids.gids, read_range(kSubgidFile, ids.name, ids.uid));
  return ids;
}

UsernsMaps sandbox_maps(const RootlessIds& ids, uint32_t agent_id) {
  return {sandbox_map(ids.uids, ids.uid, agent_id), sandbox_map(ids.gids, ids.gid, agent_id), true};
}

UsernsMaps owner_maps(const RootlessIds& ids) {
  return {owner_map(ids.uids, ids.uid), owner_map(ids.gids, ids.gid), true};
}

Result<std::string> find_map_helper(const std::string& name) {
  for (const char* dir : kHelperDirs) {
    std::string path = std::string(dir) + "/" + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return not_found(name + " is not installed (a rootless sandbox's user namespace is mapped with it)",
                   "run `sudo apt-get install uidmap`");
}

Status write_maps(pid_t pid, const UsernsMaps& maps) {
  TNK_RETURN_IF_ERROR(apply_map(pid, "newuidmap", "uid_map", maps.uid, maps.via_helpers));
  return apply_map(pid, "newgidmap", "gid_map", maps.gid, maps.via_helpers);
}

Result<UniqueFd> create_userns(const UsernsMaps& maps, std::vector<pid_t>* unreaped) {
  TNK_ASSIGN_OR_RETURN(Pipe ready, make_pipe());
  TNK_ASSIGN_OR_RETURN(Pipe release, make_pipe());
  pid_t pid = fork();
  if (pid < 0) return sys_error(errno, "forking to create a user namespace");
  if (pid == 0) hold_namespace(maps.parent, ready.write_end.get(), release.read_end.get(), release.write_end.get());
  ready.write_end.reset();
  release.read_end.reset();
  char byte = 1;
  ssize_t n;
  while ((n = read(ready.read_end.get(), &byte, 1)) < 0 && errno == EINTR) {
  }
  Status status = ok_status();
  if (n != 1) {
    status = failed("the process creating a user namespace exited early");
  } else if (byte != 0) {
    status = sys_error(byte, "creating a user namespace",
                       "user namespaces are disabled or restricted on this host; run `tnk doctor`");
  }
  if (status.ok()) status = maps.parent < 0 ? write_maps(pid, maps) : write_maps_inside(maps.parent, pid, maps);
  UniqueFd ns;
  if (status.ok()) {
    std::string path = "/proc/" + std::to_string(pid) + "/ns/user";
    ns.reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns.valid()) status = sys_error(errno, "opening " + path);
  }
  // The namespace lives on through its fd; the holder need not even run again.
  kill(pid, SIGKILL);
  release.write_end.reset();
  if (unreaped != nullptr) {
    unreaped->push_back(pid);
  } else {
    reap(pid);
  }
  if (!status.ok()) return std::move(status).error();
  return ns;
}

Result<std::string> run_as_mapped_root(int userns_fd, const std::string& what, const MappedRootWork& work) {
  TNK_ASSIGN_OR_RETURN(Pipe result, make_pipe());
  pid_t pid = fork();
  if (pid < 0) return sys_error(errno, "forking to " + what);
  if (pid == 0) {
    result.read_end.reset();
    int err = 0;
    std::string text;
    if (setns(userns_fd, CLONE_NEWUSER) != 0 || setgroups(0, nullptr) != 0 || setresgid(0, 0, 0) != 0 ||
        setresuid(0, 0, 0) != 0) {
      err = errno;
    } else if (Result<std::string> done = work(); done.ok()) {
      text = std::move(*done);
    } else {
      err = done.error().sys_errno != 0 ? done.error().sys_errno : EIO;
      text = done.error().message;
    }
    bool sent =
        write_all(result.write_end.get(), std::string(reinterpret_cast<const char*>(&err), sizeof(err)) + text, "pipe")
            .ok();
    _exit(sent && err == 0 ? 0 : 1);
  }
  result.write_end.reset();
  std::string answer;
  char buf[4096];
  ssize_t n;
  while ((n = read(result.read_end.get(), buf, sizeof(buf))) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  reap(pid);
  int err = 0;
  if (answer.size() < sizeof(err)) return failed("the process that was to " + what + " exited without a result");
  std::memcpy(&err, answer.data(), sizeof(err));
  std::string text = answer.substr(sizeof(err));
  if (err == 0) return text;
  Error e = sys_error(err, what);
  if (!text.empty()) e.message = text;
  return e;
}

Result<std::string> run_in_new_userns(const UsernsMaps& maps, const std::string& what, const MappedRootWork& work) {
  TNK_ASSIGN_OR_RETURN(UniqueFd ns, create_userns(maps));
  return run_as_mapped_root(ns.get(), what, work);
}

Result<std::string> run_as_range_owner(const std::string& what, const MappedRootWork& work) {
  TNK_ASSIGN_OR_RETURN(RootlessIds ids, rootless_ids());
  return run_in_new_userns(owner_maps(ids), what, work);
}

}  // namespace tnk::idmap
