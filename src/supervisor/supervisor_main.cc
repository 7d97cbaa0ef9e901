#include "supervisor/supervisor_main.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/capped_log.h"
#include "core/files.h"
#include "core/log_drain.h"
#include "linux/systemd_scope.h"
#include "session/protocol.h"
#include "state/layout.h"
#include "state/liveness.h"
#include "supervisor/launch.h"
#include "supervisor/server.h"

namespace tnk::supervisor {
namespace {

// A start probes the supervisor's lock for a moment (state::supervisor_alive); only a live supervisor
// holds it longer.
constexpr std::chrono::seconds kClaimWait{5};

Result<SupervisorConfig> read_config() {
  TNK_ASSIGN_OR_RETURN(std::string text, read_file("/proc/self/fd/" + std::to_string(kConfigFd)));
  ::close(kConfigFd);
  auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded()) return failed("the supervisor config is not JSON");
  return config_from_json(json);
}

// The supervisor's stdout and stderr, which the relays it forks and the processes it starts share: a
// pipe that a thread drains into supervisor.log, capped and rotated, so that nothing a sandbox makes them
// write can fill the disk (security review M5). What the launcher wrote there (it truncated the file)
// counts against the cap.
Result<std::unique_ptr<LogDrain>> capture_output(const SupervisorConfig& config) {
  TNK_ASSIGN_OR_RETURN(CappedLog log, CappedLog::open(config.state_dir / state::kSupervisorLog, kLogCapBytes, false));
  TNK_ASSIGN_OR_RETURN(Pipe pipe, make_pipe());
  if (::dup2(pipe.write_end.get(), STDOUT_FILENO) < 0 || ::dup2(pipe.write_end.get(), STDERR_FILENO) < 0) {
    return sys_error(errno, "redirecting the supervisor's output");
  }
  return LogDrain::start(std::move(pipe.read_end), std::move(log));
}

// SIGCHLD and the termination signals arrive as reads on a signalfd, in the poll loop.
Result<UniqueFd> block_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return sys_error(errno, "sigprocmask");
  UniqueFd fd(::signalfd(-1, &set, SFD_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, "signalfd");
  ::signal(SIGPIPE, SIG_IGN);
  return fd;
}

Status write_pid_file(const SupervisorConfig& config) {
  auto start = state::process_start_time(::getpid());
  if (!start) return failed("cannot read the supervisor's own start time");
  return write_file_atomic(config.state_dir / state::kSupervisorPidFile,
                           state::format_pid_record({::getpid(), *start}));
}

// The ready pipe gets exactly one line; after that its fd number may belong to something else.
bool reported = false;

void report(const nlohmann::json& answer) {
  if (reported) return;
  reported = true;
  std::string line = answer.dump() + "\n";
  (void)write_all(kReadyFd, line, "ready pipe");
  ::close(kReadyFd);
}

void report_error(const Error& error) {
  std::fprintf(stderr, "tnk-supervisor: %s\n", error.message.c_str());
  report({{"ok", false}, {"message", error.message}, {"hint", error.hint}, {"exit_code", exit_code_for(error.kind)}});
}

// Everything up to "ready". On failure nothing of the sandbox is left running.
Status serve(const SupervisorConfig& config, const EngineFactory& make_engine) {
  // Launched from the project, where every host process it starts (relays, QEMU, virtiofsd) would
  // otherwise keep its working directory: the state directory is the supervisor's own.
  if (::chdir(config.state_dir.c_str()) != 0) return sys_error(errno, "changing to " + config.state_dir.string());
  TNK_ASSIGN_OR_RETURN(UniqueFd signals, block_signals());
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) return sys_error(errno, "PR_SET_CHILD_SUBREAPER");
  TNK_ASSIGN_OR_RETURN(auto engine, make_engine(config));
  TNK_ASSIGN_OR_RETURN(std::vector<std::string> notes, engine->start());
  auto control = session::listen_control(config.state_dir / state::kControlSocket);
  Status ready = control ? write_pid_file(config) : Status(control.error());
  Server server(config, *engine, control ? std::move(*control) : UniqueFd(), std::move(signals));
  if (ready.ok()) ready = server.start_relays();
  if (!ready.ok()) {
    (void)engine->stop(std::chrono::milliseconds(0));
    leave_running_state(config.state_dir, nullptr);
    return ready;
  }
  report({{"ok", true}, {"pid", ::getpid()}, {"notes", notes}});
  std::fprintf(stderr, "tnk-supervisor: sandbox %s is running\n", config.id.c_str());
  Status served = server.run();
  // The sandbox ended by itself (a killed QEMU, a crashed PID 1): `ls` shows it broken, the next start
  // says why.
  leave_running_state(config.state_dir, served.ok() ? nullptr : &served.error());
  return served;
}

}  // namespace

int supervisor_main(const EngineFactory& make_engine) {
  ::prctl(PR_SET_NAME, "tnk-supervisor");  // exec'ed through /proc/self/exe, it would be "exe"
  // Processes forked into the sandbox must not inherit the ready pipe.
  ::fcntl(kReadyFd, F_SETFD, FD_CLOEXEC);
  auto config = read_config();
  if (!config) {
    report_error(config.error());
    return 1;
  }
  // Before anything of the sandbox is touched: a second supervisor beside a live one (a start that gave
  // up on it, or was killed, leaves it running without a pid file yet) refuses here. Held until exit.
  auto claimed = state::claim_supervisor(config->state_dir, kClaimWait);
  if (!claimed) {
    report_error(claimed.error());
    return 1;
  }
  // Started by systemd-run in a scope of its own: into the scope's leaf before it forks anything, so
  // that the sandbox's cgroups beside the leaf can have every controller.
  if (config->cgroup_scope) {
    if (Status settled = linux::settle_in_scope(); !settled.ok()) {
      report_error(settled.error());
      return 1;
    }
  }
  // Alive until this returns: its end copies what the pipe still holds.
  auto output = capture_output(*config);
  if (!output) {
    report_error(output.error());
    return 1;
  }
  Status served = serve(*config, make_engine);
  if (!served.ok()) {
    report_error(served.error());
    return 1;
  }
  std::fprintf(stderr, "tnk-supervisor: sandbox %s stopped\n", config->id.c_str());
  return 0;
}

int reexec_as_tnk(char** argv) {
  ::close(kSelfFd);
  const char* short_argv[] = {"tnk", argv[1], argv[2], nullptr};
  ::execv("/proc/self/exe", const_cast<char* const*>(short_argv));
  std::fprintf(stderr, "tnk-supervisor: executing tnk again: %s\n", std::strerror(errno));
  return 1;
}

}  // namespace tnk::supervisor
