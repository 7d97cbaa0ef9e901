// The ns backend's namespace engine: a persistent sandbox is a PID 1 in its own user, mount, pid, net
// (loopback only), ipc, uts and cgroup namespaces, whose root is an overlay of a never written image
// tree and a persistent upper directory; sessions join it with setns.
// Two ways to run it. Rootless (the normal way): the caller is the user, inside ids come from the user's
// subordinate range except `agent`, which is the user (idmap/id_map.h), and the image tree is owned by
// the range. As root: inside 0..65535 is root's own range (idmap/root_ranges.h), the root-owned image and
// the project are idmapped.
// The caller is the supervisor, single-threaded. It reaps init_pid and session pids itself (this module
// never calls waitpid(-1)). See docs/design/ns-feasibility.md for the measured recipe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/ns/namespaces.h"
#include "core/result.h"
#include "core/unique_fd.h"
#include "idmap/root_ranges.h"
#include "idmap/userns.h"
#include "linux/resource_limits.h"
#include "session/messages.h"

namespace tnk::ns {

inline constexpr uid_t kIdCount = 65536;
inline constexpr uid_t kAgentId = idmap::kAgentId;  // `agent` inside; rootless the user, as root 101000
inline constexpr gid_t kTtyGid = 5;                 // group of the sandbox's pty slaves (Debian's `tty`)

// Run as root: where the sandbox's uid and gid 0 sit on the host. Never host root.
struct HostIds {
  uid_t uid = idmap::kLegacyRootStart;
  gid_t gid = idmap::kLegacyRootStart;
};

// Root's ranges (or the legacy 100000..): the host ids of a new sandbox that root runs.
HostIds root_ids_for_new_sandbox();

// The host ids of a sandbox root runs: those it was made with (the owner of its upper directory), so
// that reserving root's range later leaves it working; for a new sandbox, root's ranges.
HostIds root_sandbox_ids(const std::filesystem::path& upper_dir);

// The maps of a sandbox run by root: inside 0..65535 on host `ids`.. (written directly).
idmap::UsernsMaps root_run_maps(HostIds ids);

struct SandboxSpec {
  std::filesystem::path image_root;   // the shared image tree: overlay lower, idmapped, never written
  std::filesystem::path upper_dir;    // persistent overlay upper (created if absent; the directory itself
                                      // is given to host_ids, the sandbox's root)
  std::filesystem::path work_dir;     // overlayfs workdir (same); on the same filesystem as upper_dir
  std::filesystem::path staging_dir;  // empty dir on the host used as mount staging point (created if absent)
  std::filesystem::path project_dir;  // host project: mounted read-write at mount_point, idmapped owner<->agent
  std::string mount_point;            // e.g. "/workspace" (created in the tree if missing)
  std::string hostname;               // sethostname inside
  std::string etc_hosts;              // contents for /etc/hosts (bind-mounted read-only over it)
  std::string resolv_conf;            // contents for /etc/resolv.conf ("" = no DNS: an empty file)
  std::filesystem::path runtime_dir;  // host dir (exists) where the generated files above are written
  linux::Limits limits;
  std::string cgroup_name;  // e.g. the sandbox id: cgroup dirs are named by linux::sandbox_cgroup_name
  // Start even when the pids or memory limit cannot be applied (tnk.toml allow_unlimited): a note says
  // so. Unset, such a start fails (security review M5; linux/cgroups.h, require_limits).
  bool allow_unlimited = false;
  // Set: run rootless as this user (image_root must be owned by its range). Unset: run as root, on
  // host_ids.
  std::optional<idmap::RootlessIds> rootless;
  HostIds host_ids;
  std::vector<std::string> protected_paths;  // project-relative, each a file or directory: read-only inside
  // Set in review mode (docs/workspace.md): the project is mounted as the lower layer of an overlay with
  // these as its upper and work directories (same filesystem), so the sandbox's writes land here.
  std::filesystem::path review_upper;
  std::filesystem::path review_work;
  // Set for a linked worktree: its common git dir, shared at this same path inside (a bind like the
  // project's), with git_protected_paths (relative to it) read-only.
  std::filesystem::path git_common_dir;
  std::vector<std::string> git_protected_paths;
};

struct Sandbox {
  pid_t init_pid = 0;              // PID 1 of the sandbox, a child of the caller (reap it with waitpid)
  Namespaces namespaces;           // kept for the sandbox's life: joiners and listen helpers use them
  std::vector<std::string> notes;  // one-line notes, e.g. "pids/memory limits not applied: ..."
};

// Creates the namespaces and PID 1 and returns once PID 1 is ready, or with an error naming the step and
// object that failed. PID 1 dies with the caller (PR_SET_PDEATHSIG), reaps orphans, and on SIGTERM sends
// SIGTERM to every process in the sandbox, waits up to 3 s for them, then exits. Every intermediate
// process is reaped here. Paths above staging/upper/work must be searchable by their owner root or by all.
Result<Sandbox> start(const SandboxSpec& spec);

// One session: the client's exec request as the supervisor parsed it from the control socket (and
// completed its environment), handed down whole, and what only the host side adds to it. Of the request
// the session uses argv (argv[0] looked up in PATH from env, execvpe semantics), env (complete: nothing
// is inherited), cwd (inside; a missing directory is an error), identity (credentials.h), tty, rows, cols.
struct SessionSpec {
  session::ExecRequest request;
  std::string readonly_mount;  // set (provisioning): this mount, the project, is read-only for the session
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;  // when !request.tty: dup2'ed in the child; -1 = /dev/null
};

struct Session {
  pid_t pid = 0;        // a child of the caller, in the sandbox's pid namespace, session and group leader
  UniqueFd pty_master;  // when tty: master of a pty of the sandbox's devpts, O_CLOEXEC
};

// Joins PID 1's namespaces and cgroups and execs. Returns once exec succeeded. A program that does not
// exist gives not_found("sandbox: no such program: X") (answer 127); other failures name the step (126).
Result<Session> spawn(const Sandbox& sandbox, const SessionSpec& spec);

// Called repeatedly while stop() waits for PID 1. The kernel does not let PID 1 finish exiting while a
// session (a child of the caller, inside the sandbox) has exited but is not reaped: the supervisor
// reaps its own session pids here (WNOHANG), keeping their exit statuses.
using ReapHook = std::function<void()>;

// SIGTERM to PID 1 (which forwards it), wait up to `grace` for it to exit, then SIGKILL and reap.
// Without a hook, the caller's exited children inside the sandbox are reaped here and their statuses
// discarded; which sandbox is told by PID 1's /proc/<pid>/ns/pid, which only root may read (PID 1 runs as
// the range's root): rootless, use the stop() below. Removes the sandbox's cgroup directories once its
// processes are gone.
Status stop(pid_t init_pid, std::chrono::milliseconds grace, const ReapHook& reap_sessions = {});

// A session stop() reaped: its pid and wait status.
struct ReapedSession {
  pid_t pid = 0;
  int wait_status = 0;
};

// The same for a sandbox start() made, run by root or rootless: the caller's exited children in the
// sandbox's pid namespace (its fd, which start() kept) are reaped here, and their pids and statuses go
// to `reaped` when given (the supervisor tells each session's client how it ended).
Status stop(const Sandbox& sandbox, std::chrono::milliseconds grace, std::vector<ReapedSession>* reaped = nullptr);

// Removes the sandbox's cgroup directories (linux::sandbox_cgroup_name) (cleanup after a crash). Missing ones are fine.
Status remove_cgroups(const std::string& cgroup_name);

// A TCP socket listening on 127.0.0.1:port inside the sandbox's network namespace, O_CLOEXEC|O_NONBLOCK
// (linux::listen_loopback_in).
Result<UniqueFd> listen_inside(const Sandbox& sandbox, uint16_t port);

// A unix socket listening at `path` in the sandbox's mount namespace (linux::listen_unix_in).
Result<UniqueFd> listen_unix_inside(const Sandbox& sandbox, const std::string& path);

// Moves the calling process (single-threaded: a forked relay) into the sandbox's network namespace,
// and nothing else of it: sockets it opened before stay where they were made. It joins the sandbox's
// user namespace first (the network namespace belongs to it) without changing its ids.
Status enter_network(const Sandbox& sandbox);

}  // namespace tnk::ns
