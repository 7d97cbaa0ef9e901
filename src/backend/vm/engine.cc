// The vm engine: a micro-VM (QEMU microvm, tnk's kernel, the image's base disk under a per-sandbox
// qcow2 overlay) with the project shared by virtiofsd, and tnk-agent as its PID 1. Sessions run in the
// guest through one AgentClient; their ends come back on an eventfd the supervisor's loop polls.
//
// QEMU never runs as host root: rootless it is the user, in a user namespace of its own; run by root, it
// is an id of root's range with no capability, handed its files as descriptors (security review H1,
// processes.h). virtiofsd runs in a user namespace where only the guest's agent uid is the project's
// owner. QEMU runs in a network namespace of its own: the guest reaches the inference endpoint and the
// proxies through relays listening there (listen_inside); port forwards and the proxy check reach in through
// the agent's connect bridge (docs/vm-backend.md). vm_plan (plan.h) decides what this file applies.
#include "backend/vm/engine.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/bridge.h"
#include "backend/vm/agent_client.h"
#include "backend/vm/bridge.h"
#include "backend/vm/engine_launch.h"
#include "backend/vm/host_kvm.h"
#include "backend/vm/plan.h"
#include "backend/vm/processes.h"
#include "backend/vm/qmp_events.h"
#include "core/files.h"
#include "core/log_drain.h"
#include "core/random_token.h"
#include "linux/cgroups.h"
#include "linux/loopback_listener.h"
#include "state/layout.h"
#include "supervisor/engine.h"
#include "supervisor/protection.h"
#include "supervisor/relays.h"

namespace tnk::vm {
namespace {

constexpr uint32_t kAgentUid = 1000, kAgentGid = 1000;                         // the image's `agent`
constexpr supervisor::SessionKey kFirstKey = supervisor::SessionKey(1) << 32;  // above any pid: no reused-pid key

void set_identity(agent::ExecRequest& out, session::Identity identity) {
  out.confined = true;                               // every session; a guest agent reads no field as unconfined
  if (identity == session::Identity::kRoot) return;  // uid 0, gid 0
  out.uid = kAgentUid;
  out.gid = kAgentGid;
  out.groups = {kAgentGid};
}

Result<UniqueFd> dup_fd(const UniqueFd& fd) {
  if (!fd.valid()) return UniqueFd();
  UniqueFd copy(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3));
  if (!copy.valid()) return sys_error(errno, "dup");
  return copy;
}

class VmEngine : public supervisor::Engine {
 public:
  explicit VmEngine(supervisor::SupervisorConfig config)
      : config_(std::move(config)), files_(vm::vm_files(config_.state_dir)) {}
  ~VmEngine() override { (void)stop(std::chrono::milliseconds(0)); }

  Result<std::vector<std::string>> start() override {
    events_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!events_.valid()) return sys_error(errno, "eventfd");
    std::vector<std::string> notes;
    TNK_ASSIGN_OR_RETURN(std::string token, random_token());
    supervisor::ProtectionPlan protection = supervisor::plan_protection(config_);
    TNK_ASSIGN_OR_RETURN(vm::VmHostFacts facts, vm_host_facts(config_));
    facts.git_common_dir = protection.git_common_dir;
    TNK_ASSIGN_OR_RETURN(vm::VmPlan plan, vm::vm_plan(config_, facts, token));
    TNK_RETURN_IF_ERROR(ensure_overlay(config_, plan, notes));
    TNK_ASSIGN_OR_RETURN(std::optional<ReviewDirs> review_layer, review_dirs(config_));
    TNK_RETURN_IF_ERROR(make_cgroups(notes));
    TNK_ASSIGN_OR_RETURN(
        virtiofsd_, launch_virtiofsd(plan.virtiofsd_plan, plan.virtiofsd, plan.project_dir, protection.project_binds,
                                     review_layer, plan.files.virtiofsd_log, cgroup_procs_fds()));
    if (plan.git_virtiofsd) {
      TNK_ASSIGN_OR_RETURN(
          git_virtiofsd_,
          launch_virtiofsd(plan.git_virtiofsd_plan, *plan.git_virtiofsd, protection.git_common_dir,
                           protection.git_dir_binds, std::nullopt, plan.files.git_virtiofsd_log, cgroup_procs_fds()));
    }
    LaunchedQemu launched;
    Status qemu_started = launch_qemu(plan, cgroup_procs_fds(), launched);
    qemu_ = launched.pid;  // stop() ends what started, whatever failed after
    qemu_netns_ = std::move(launched.netns);
    qemu_userns_ = std::move(launched.userns);
    console_ = std::move(launched.console);
    TNK_RETURN_IF_ERROR(qemu_started);
    cgroup_procs_.clear();  // every process that joins them directly has
    auto events = QmpEvents::watch(
        files_.qmp_events_socket, std::chrono::seconds(30), [this] { return qemu_has_exited(); },
        [this](const std::string& reason) { disk_full(reason); });
    if (!events) {
      Error why = qemu_exit_error().value_or(events.error());
      (void)stop(std::chrono::milliseconds(0));
      return why;
    }
    qmp_events_ = std::move(*events);
    vm::ClientOptions options{std::chrono::seconds(30), std::chrono::seconds(120)};  // connect, hello
    auto client = vm::AgentClient::connect(files_.agent_socket, token, options);
    if (!client) {
      std::optional<Error> exited = qemu_exit_error();
      (void)stop(std::chrono::milliseconds(0));
      if (auto full = failure()) return *full;  // the disk filled while the guest booted
      if (exited) return *exited;
      return client.error().context("waiting for the guest agent (console: " + files_.serial_log.string() + ")");
    }
    client_ = std::move(*client);
    TNK_RETURN_IF_ERROR(client_->set_clock());  // the guest's RTC gave it whole seconds, and its boot took some
    if (!config_.vm_kvm)
      notes.push_back("the vm runs under TCG emulation (no hardware KVM): expect a slower guest CPU");
    TNK_ASSIGN_OR_RETURN(std::vector<std::string> protection_notes, supervisor::record_protection(config_, protection));
    notes.insert(notes.end(), protection_notes.begin(), protection_notes.end());
    return notes;
  }

  Result<supervisor::StartedSession> spawn(const session::ExecRequest& request,
                                           const std::vector<UniqueFd>& stdio) override {
    if (!client_) return failed("the sandbox is not running");
    agent::ExecRequest exec;
    exec.argv = request.argv;
    exec.env = request.env;
    exec.cwd = request.cwd.empty() ? config_.mount_point : request.cwd;
    set_identity(exec, request.identity);
    // Provisioning reads the project, never writes it, in either phase.
    if (request.provisioning) exec.readonly_mount = config_.mount_point;
    exec.tty = request.tty;
    exec.rows = request.rows;
    exec.cols = request.cols;
    vm::SessionIo io;
    supervisor::StartedSession started;
    if (request.tty) {
      TNK_ASSIGN_OR_RETURN(HostPty pty, open_host_pty(request.rows, request.cols));
      io.terminal = std::move(pty.slave);
      started.pty_master = std::move(pty.master);
    } else {
      TNK_ASSIGN_OR_RETURN(io.input, dup_fd(stdio.at(0)));
      TNK_ASSIGN_OR_RETURN(io.output, dup_fd(stdio.at(1)));
      TNK_ASSIGN_OR_RETURN(io.errors, dup_fd(stdio.at(2)));
    }
    supervisor::SessionKey key = next_key_++;
    auto on_exit = [this, key](vm::SessionId, const vm::SessionExit& exit) { session_exited(key, exit.code); };
    TNK_ASSIGN_OR_RETURN(vm::SessionId id, client_->start(exec, std::move(io), on_exit));
    sessions_[key] = id;
    started.key = key;
    return started;
  }

  int session_events_fd() const override { return events_.get(); }

  std::vector<supervisor::EndedSession> ended_sessions() override {
    uint64_t count = 0;
    (void)!::read(events_.get(), &count, sizeof count);
    std::vector<supervisor::EndedSession> ended;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ended.swap(ended_);
    }
    for (const auto& e : ended) sessions_.erase(e.key);
    return ended;
  }

  void signal_session(supervisor::SessionKey key, int sig) override {
    auto it = sessions_.find(key);
    if (client_ && it != sessions_.end()) (void)client_->signal(it->second, sig);
  }

  void resize_session(supervisor::SessionKey key, unsigned short rows, unsigned short cols) override {
    auto it = sessions_.find(key);
    if (client_ && it != sessions_.end()) (void)client_->resize(it->second, rows, cols);
  }

  std::string relay_host() const override { return vm::kForwardGuestIp; }
  // The guest reaches 10.0.2.2:<port>; QEMU's user network connects for it to 127.0.0.1:<port> of
  // QEMU's own network namespace (qemu_argv.h), where this listens. Rootless, that namespace belongs to
  // QEMU's user namespace, joined first; run by root it is the host's, which needs no joining.
  Result<UniqueFd> listen_inside(uint16_t port) override {
    if (!qemu_netns_.valid()) return failed("the vm sandbox " + config_.id + " is not running");
    return linux::listen_loopback_in(::geteuid() != 0 ? qemu_userns_.get() : -1, qemu_netns_.get(), port,
                                     "in QEMU's network namespace");
  }

  // QEMU's namespace, where kBridgeHostAddress:kBridgeHostPort is the guest agent's connect bridge.
  Status enter_network() override {
    if (!qemu_netns_.valid()) return failed("the vm sandbox " + config_.id + " is not running");
    // Rootless, the network namespace belongs to QEMU's user namespace: joining that first gives the
    // right to join it. (As root it is the host's own, which setns refuses to re-enter: skipped.)
    if (::geteuid() != 0 && ::setns(qemu_userns_.get(), CLONE_NEWUSER) != 0) {
      return sys_error(errno, "joining QEMU's user namespace");
    }
    if (::setns(qemu_netns_.get(), CLONE_NEWNET) != 0) return sys_error(errno, "joining QEMU's network namespace");
    return ok_status();
  }

  Result<UniqueFd> connect_inside(const std::string& ip, uint16_t port, net::Clock::time_point deadline,
                                  int stop_fd) override {
    return bridge_connect(vm::kBridgeHostAddress, vm::kBridgeHostPort, {ip, port}, deadline, stop_fd);
  }

  bool is_sandbox_process(pid_t pid) const override {
    return pid > 0 && (pid == qemu_ || pid == virtiofsd_ || pid == git_virtiofsd_);
  }

  std::string sandbox_process_name(pid_t pid) const override {
    if (pid == qemu_) return "QEMU (see " + files_.qemu_log.string() + ")";
    if (pid == git_virtiofsd_) return "the git dir's virtiofsd (see " + files_.git_virtiofsd_log.string() + ")";
    return "virtiofsd (see " + files_.virtiofsd_log.string() + ")";
  }

  std::optional<Error> failure() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return disk_full_;
  }

  void sandbox_ended(pid_t reaped) override {
    for (pid_t* pid : {&qemu_, &virtiofsd_, &git_virtiofsd_}) {
      if (reaped == *pid) *pid = 0;
    }
  }

  Result<std::vector<std::chrono::microseconds>> agent_pings(int count) override {
    if (!client_) return failed("the sandbox is not running");
    std::vector<std::chrono::microseconds> rtts;
    for (int i = 0; i < count; ++i) {
      TNK_ASSIGN_OR_RETURN(std::chrono::microseconds rtt, client_->ping(std::chrono::seconds(1)));
      rtts.push_back(rtt);
    }
    return rtts;
  }

  Status pause(bool held) override {  // going on, the guest is told the time: its clock stood still meanwhile
    TNK_RETURN_IF_ERROR(qemu_ > 0 ? qmp_pause(files_.qmp_socket, held) : failed("the sandbox is not running"));
    return held || !client_ ? ok_status() : client_->set_clock();
  }

  // SIGTERM to the sessions, agent poweroff, QMP quit, SIGKILL; virtiofsd ends once QEMU has gone.
  Status stop(std::chrono::milliseconds grace) override {
    if (qemu_ > 0 && client_ && grace.count() > 0) end_sessions(std::min(grace, std::chrono::milliseconds(5000)));
    if (qemu_ > 0 && client_ && grace.count() > 0 && client_->poweroff(std::chrono::seconds(2)).ok()) {
      if (wait_child(qemu_, std::min(grace, std::chrono::milliseconds(5000)))) qemu_ = 0;
    }
    if (qemu_ > 0 && qmp_quit(files_.qmp_socket, std::chrono::seconds(1)).ok()) {
      if (wait_child(qemu_, std::chrono::seconds(2))) qemu_ = 0;
    }
    if (qemu_ > 0) {
      ::kill(qemu_, SIGKILL);
      wait_child(qemu_, std::chrono::seconds(5));
      qemu_ = 0;
    }
    qmp_events_.reset();
    console_.reset();  // QEMU has gone: what it wrote is all in serial.log once this returns
    qemu_netns_.reset();
    client_.reset();  // the sessions still running end as lost
    for (pid_t* pid : {&virtiofsd_, &git_virtiofsd_}) {
      if (*pid > 0 && !wait_child(*pid, std::chrono::seconds(1))) {
        ::kill(*pid, SIGKILL);
        wait_child(*pid, std::chrono::seconds(5));
      }
      *pid = 0;
    }
    remove_sockets();
    cgroup_procs_.clear();
    (void)linux::remove_cgroup_dirs(cgroup_dirs_);  // waits briefly while the kernel still counts the exited
    cgroup_dirs_.clear();
    return ok_status();
  }

 private:
  // Security review M5: QEMU and virtiofsd run in the sandbox's cgroup tnk-<id> under its pids limit
  // (vm::host_limits); a start without it is refused as on ns (exit 77) unless tnk.toml says allow_unlimited.
  Status make_cgroups(std::vector<std::string>& notes) {
    TNK_ASSIGN_OR_RETURN(linux::MadeCgroups made,
                         linux::make_sandbox_cgroups(config_.id, vm::host_limits(), config_.allow_unlimited));
    cgroup_dirs_ = std::move(made.dirs);
    cgroup_procs_ = std::move(made.procs);
    notes.insert(notes.end(), made.notes.begin(), made.notes.end());
    return ok_status();
  }

  std::vector<int> cgroup_procs_fds() const {
    std::vector<int> fds;
    for (const auto& fd : cgroup_procs_) fds.push_back(fd.get());
    return fds;
  }

  // The sockets QEMU and virtiofsd served (the next start makes its own).
  void remove_sockets() const {
    std::error_code ec;
    for (const auto& socket : {files_.agent_socket, files_.qmp_socket, files_.qmp_events_socket,
                               files_.virtiofsd_socket, files_.serial_socket, files_.git_virtiofsd_socket}) {
      std::filesystem::remove(socket, ec);
    }
  }

  // The sessions still running get SIGTERM, as an ns sandbox's processes get it from its PID 1, and up
  // to `wait` to end: their clients then hear the status they ended with (128+15 for most), not that
  // the sandbox was lost under them (kExitLost), and their session_exit records say so.
  void end_sessions(std::chrono::milliseconds wait) {
    if (sessions_.empty()) return;
    for (const auto& session : sessions_) (void)client_->signal(session.second, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        bool all_ended = std::all_of(sessions_.begin(), sessions_.end(), [this](const auto& session) {
          return std::any_of(ended_.begin(), ended_.end(),
                             [&session](const supervisor::EndedSession& e) { return e.key == session.first; });
        });
        if (all_ended) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // On the QMP watcher's thread, before it tells QEMU to quit: QEMU paused the guest because a write to
  // its disk found the host's file system full. The overlay is left as a power cut would leave it (the
  // guest's journal recovers it at the next boot), and nothing of the sandbox keeps running.
  void disk_full(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mutex_);
    disk_full_ = failed("the vm's disk " + files_.disk.string() + " cannot grow: " + reason +
                            " (the host's file system is full; QEMU paused the guest, and tnk stopped the sandbox)",
                        "free some space on the file system of " + files_.disk.parent_path().string() +
                            ", then start the sandbox again: it boots on the same disk");
  }

  // Whether QEMU has exited (not reaped: the supervisor's loop does that, or qemu_exit_error()).
  bool qemu_has_exited() const {
    siginfo_t info{};
    return qemu_ > 0 && ::waitid(P_PID, static_cast<id_t>(qemu_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == qemu_;
  }

  // While the vm starts: when QEMU has already exited (a kernel or disk file gone from the cache, an
  // option it refused), the error says so with QEMU's own last line, and QEMU is reaped.
  std::optional<Error> qemu_exit_error() {
    if (!qemu_has_exited()) return std::nullopt;
    int status = 0;
    ::waitpid(qemu_, &status, 0);
    qemu_ = 0;
    std::string last;
    if (auto log = read_file(files_.qemu_log)) {
      std::string text = *log;
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      last = text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    }
    std::string how = WIFEXITED(status) ? "status " + std::to_string(WEXITSTATUS(status))
                                        : "signal " + std::to_string(WTERMSIG(status));
    return failed("QEMU exited as the vm started (" + how + ")" + (last.empty() ? "" : ": " + last),
                  "its output is in " + files_.qemu_log.string());
  }

  void session_exited(supervisor::SessionKey key, int code) {  // on the client's pump thread
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ended_.push_back({key, code});
    }
    uint64_t one = 1;
    (void)!::write(events_.get(), &one, sizeof one);
  }

  supervisor::SupervisorConfig config_;
  vm::VmFiles files_;  // in config_.state_dir
  pid_t qemu_ = 0, virtiofsd_ = 0, git_virtiofsd_ = 0;
  std::vector<std::filesystem::path> cgroup_dirs_;  // the sandbox's cgroups, removed at stop
  std::vector<UniqueFd> cgroup_procs_;              // their cgroup.procs, until QEMU has joined
  UniqueFd qemu_netns_;                             // QEMU's network namespace, for enter_network()
  UniqueFd qemu_userns_;  // and the user namespace it belongs to (rootless: QEMU's own; as root: the host's)
  std::unique_ptr<LogDrain> console_;      // while QEMU runs
  std::unique_ptr<QmpEvents> qmp_events_;  // while QEMU runs
  std::unique_ptr<vm::AgentClient> client_;
  UniqueFd events_;
  mutable std::mutex mutex_;        // guards ended_ (written on the client's pump thread) and disk_full_
  std::optional<Error> disk_full_;  // written on the QMP watcher's thread
  std::vector<supervisor::EndedSession> ended_;
  std::map<supervisor::SessionKey, vm::SessionId> sessions_;  // running, by key (the supervisor's thread only)
  supervisor::SessionKey next_key_ = kFirstKey;
};

}  // namespace

Result<std::unique_ptr<supervisor::Engine>> make_vm_engine(const supervisor::SupervisorConfig& config) {
  return std::unique_ptr<supervisor::Engine>(std::make_unique<VmEngine>(config));
}

}  // namespace tnk::vm
