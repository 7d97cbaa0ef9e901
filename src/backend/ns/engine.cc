// The ns engine: a namespace sandbox (backend/ns/sandbox.h) run by the supervisor.
#include "backend/ns/engine.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "backend/ns/disk_watch.h"
#include "backend/ns/joiner.h"
#include "backend/ns/sandbox.h"
#include "core/subprocess.h"
#include "linux/cgroups.h"
#include "linux/freeze.h"
#include "session/messages.h"
#include "state/layout.h"
#include "state/own_disk.h"
#include "supervisor/engine.h"
#include "supervisor/log_line.h"
#include "supervisor/protection.h"

namespace tnk::ns {
namespace {

// Inside, the host's names resolve to loopback, where the supervisor's relays listen.
std::string etc_hosts(const std::string& hostname) {
  return "127.0.0.1\tlocalhost host.lima.internal host.tnk.internal\n"
         "127.0.1.1\t" +
         hostname +
         "\n"
         "::1\tlocalhost ip6-localhost ip6-loopback\n";
}

class NsEngine : public supervisor::Engine {
 public:
  explicit NsEngine(supervisor::SupervisorConfig config) : config_(std::move(config)) {}

  Result<std::vector<std::string>> start() override {
    ns::SandboxSpec spec;
    spec.image_root = config_.image_root;
    const state::NsLayers own = state::ns_layers(config_.state_dir);
    spec.upper_dir = own.upper;
    spec.work_dir = own.work;
    spec.staging_dir = config_.state_dir / state::kStagingDir;
    spec.runtime_dir = config_.state_dir / state::kRuntimeDir;
    spec.project_dir = config_.project_dir;
    spec.mount_point = config_.mount_point;
    spec.hostname = config_.id;
    spec.etc_hosts = etc_hosts(config_.id);
    spec.resolv_conf = "";  // no DNS: names outside are resolved by the supervisor's relays
    spec.limits.memory_bytes = config_.memory_bytes;
    spec.limits.cpus = config_.cpus;
    spec.allow_unlimited = config_.allow_unlimited;
    spec.cgroup_name = config_.id;
    if (::geteuid() != 0) {
      TNK_ASSIGN_OR_RETURN(spec.rootless, idmap::rootless_ids());
    } else {
      spec.host_ids = ns::root_sandbox_ids(spec.upper_dir);
    }
    std::error_code ec;
    for (const auto& dir : {spec.staging_dir, spec.runtime_dir}) {
      std::filesystem::create_directories(dir, ec);
      if (ec) return failed("creating " + dir.string() + ": " + ec.message());
    }
    supervisor::ProtectionPlan protection = supervisor::plan_protection(config_);
    spec.protected_paths = protection.project_binds;
    if (config_.review) {
      spec.review_upper = own.review_upper;
      spec.review_work = own.review_work;
    }
    spec.git_common_dir = protection.git_common_dir;
    spec.git_protected_paths = protection.git_dir_binds;
    TNK_ASSIGN_OR_RETURN(ns::Sandbox sandbox, ns::start(spec));
    auto joiner = ns::Joiner::start(sandbox);
    if (!joiner) {
      (void)ns::stop(sandbox, std::chrono::milliseconds(0));
      return joiner.error();
    }
    joiner_ = std::move(*joiner);
    if (config_.disk_bytes) {
      auto watch = ns::DiskWatch::start(sandbox, layers(spec), *config_.disk_bytes);
      if (!watch) {
        joiner_.reset();
        (void)ns::stop(sandbox, std::chrono::milliseconds(0));
        return watch.error();
      }
      disk_watch_ = std::move(*watch);
    }
    std::vector<std::string> notes = std::move(sandbox.notes);
    sandbox_ = std::move(sandbox);
    TNK_ASSIGN_OR_RETURN(std::vector<std::string> protection_notes, supervisor::record_protection(config_, protection));
    notes.insert(notes.end(), protection_notes.begin(), protection_notes.end());
    return notes;
  }

  Result<supervisor::StartedSession> spawn(const session::ExecRequest& request,
                                           const std::vector<UniqueFd>& stdio) override {
    ns::SessionSpec spec;
    spec.request = request;  // as parsed from the client, whole: the joiner reads what it needs of it
    // Provisioning reads the project, never writes it, in either phase.
    if (request.provisioning) spec.readonly_mount = config_.mount_point;
    if (!request.tty) {
      spec.stdin_fd = stdio.at(0).get();
      spec.stdout_fd = stdio.at(1).get();
      spec.stderr_fd = stdio.at(2).get();
    }
    if (!joiner_) return failed("the sandbox is not running");
    TNK_ASSIGN_OR_RETURN(ns::Session session, joiner_->spawn(spec));
    return supervisor::StartedSession{session.pid, session.pid, std::move(session.pty_master)};
  }

  // The session leads its own process group.
  void signal_session(supervisor::SessionKey key, int sig) override {
    if (key <= 0) return;
    ::kill(-static_cast<pid_t>(key), sig);
    if (sig == SIGKILL) ::kill(static_cast<pid_t>(key), sig);  // before it made its group
  }

  Result<UniqueFd> listen_inside(uint16_t port) override {
    if (!sandbox_) return failed("the sandbox is not running");
    return ns::listen_inside(*sandbox_, port);
  }
  Result<UniqueFd> listen_unix_inside(const std::string& path, uint16_t /*relay_port*/) override {
    if (!sandbox_) return failed("the sandbox is not running");
    return ns::listen_unix_inside(*sandbox_, path);
  }
  Status enter_network() override {
    if (!sandbox_) return failed("the sandbox is not running");
    return ns::enter_network(*sandbox_);
  }

  // The joiner is part of the sandbox: without it no session can start. So is the disk watch: without
  // it the sandbox's disk is not bounded.
  bool is_sandbox_process(pid_t pid) const override {
    return pid == init_pid() || (joiner_ && pid == joiner_->pid()) || (disk_watch_ && pid == disk_watch_->pid());
  }

  std::string sandbox_process_name(pid_t pid) const override {
    if (pid == init_pid()) return "PID 1";
    return disk_watch_ && pid == disk_watch_->pid() ? "disk watch" : "joiner";
  }

  // `reaped` is gone already: it must not be signalled or waited for again.
  void sandbox_ended(pid_t reaped) override {
    if (disk_watch_ && reaped == disk_watch_->pid()) {  // the supervisor stops the sandbox next
      failure_ = disk_watch_->verdict().value_or(ns::DiskWatch::ended("it ended without a word"));
      disk_watch_->forget();
      disk_watch_.reset();
      return;
    }
    if (joiner_ && reaped == joiner_->pid()) joiner_->forget();
    joiner_.reset();
    if (reaped != init_pid()) return;  // the joiner: stop() still ends PID 1
    sandbox_.reset();
    cgroup_dirs_.clear();
    (void)ns::remove_cgroups(config_.id);  // best effort: the processes are gone already
  }

  // The sessions stop() reaps are the supervisor's children, but it can no longer reap them itself:
  // their statuses come back through ended_sessions(), so that each client hears how its session
  // ended (128+15 for the SIGTERM of a stop) and writes its session_exit.
  Status stop(std::chrono::milliseconds grace) override {
    disk_watch_.reset();
    if (!sandbox_) return ok_status();
    joiner_.reset();
    std::vector<ns::ReapedSession> reaped;
    Status stopped = ns::stop(*sandbox_, grace, &reaped);
    for (const ns::ReapedSession& session : reaped) {
      reaped_.push_back({session.pid, exit_code_from_wait_status(session.wait_status)});
    }
    sandbox_.reset();
    cgroup_dirs_.clear();
    return stopped;
  }

  std::vector<supervisor::EndedSession> ended_sessions() override { return std::exchange(reaped_, {}); }

  // The sandbox's cgroups are found once (PID 1 never leaves them): every exec reads only their counters.
  uint64_t oom_kills() const override {
    if (!sandbox_) return 0;
    if (cgroup_dirs_.empty()) {
      auto dirs = linux::process_cgroup_dirs(sandbox_->init_pid);
      if (!dirs.ok()) return 0;
      cgroup_dirs_ = std::move(*dirs);
    }
    return linux::oom_kills(cgroup_dirs_);
  }

  Status pause(bool held) override {
    if (!sandbox_) return failed("the sandbox is not running");
    if (!held) {
      if (!frozen_) return ok_status();
      Status thawed = linux::thaw_sandbox(*frozen_);
      frozen_.reset();
      return thawed;
    }
    if (frozen_) return ok_status();
    (void)oom_kills();  // finds the sandbox's cgroups
    TNK_ASSIGN_OR_RETURN(frozen_, linux::freeze_sandbox(sandbox_->init_pid, cgroup_dirs_));
    supervisor::log_line("held still by the " + frozen_->how);
    return ok_status();
  }

  // The disk watch may have said why before the supervisor reaps it: PID 1, which it killed, may come first.
  std::optional<Error> failure() const override {
    if (failure_) return failure_;
    return disk_watch_ ? disk_watch_->verdict() : std::nullopt;
  }

 private:
  pid_t init_pid() const { return sandbox_ ? sandbox_->init_pid : 0; }

  // What the sandbox writes on the host: its overlay's upper and work directories, and in review mode
  // the project's.
  static std::vector<std::filesystem::path> layers(const ns::SandboxSpec& spec) {
    std::vector<std::filesystem::path> dirs{spec.upper_dir, spec.work_dir};
    if (!spec.review_upper.empty()) dirs.insert(dirs.end(), {spec.review_upper, spec.review_work});
    return dirs;
  }

  supervisor::SupervisorConfig config_;
  std::optional<ns::Sandbox> sandbox_;                      // while it runs: PID 1 and the namespaces' fds
  mutable std::vector<std::filesystem::path> cgroup_dirs_;  // the sandbox's, once oom_kills() found them
  std::optional<ns::Joiner> joiner_;
  std::vector<supervisor::EndedSession> reaped_;  // sessions stop() reaped, until ended_sessions() hands them on
  std::optional<ns::DiskWatch> disk_watch_;       // while it runs: the bound on the sandbox's disk
  std::optional<Error> failure_;                  // the disk watch's verdict, once it ended the sandbox
  std::optional<linux::Frozen> frozen_;           // while a checkpoint holds it still (pause)
};

}  // namespace

Result<std::unique_ptr<supervisor::Engine>> make_ns_engine(const supervisor::SupervisorConfig& config) {
  return std::unique_ptr<supervisor::Engine>(std::make_unique<NsEngine>(config));
}

}  // namespace tnk::ns
