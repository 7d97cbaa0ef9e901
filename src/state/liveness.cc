#include "state/liveness.h"

#include <signal.h>

#include <cerrno>
#include <sstream>

#include "core/files.h"
#include "state/layout.h"

namespace tnk::state {

std::string to_string(SandboxState state) {
  switch (state) {
    case SandboxState::kAbsent: return "absent";
    case SandboxState::kStopped: return "stopped";
    case SandboxState::kRunning: return "running";
    case SandboxState::kBroken: return "broken";
  }
  return "broken";
}

std::optional<unsigned long long> process_start_time(pid_t pid) {
  auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return std::nullopt;
  // The command name (field 2) may contain spaces and parentheses: fields resume after the last ')'.
  auto close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat->substr(close + 1));
  std::string field;
  // A zombie has ended: it only waits for a parent to reap it (this machine's init is slow to).
  if (!(rest >> field) || field == "Z" || field == "X") return std::nullopt;
  for (int i = 4; i < 22 && rest >> field; ++i) {
  }
  unsigned long long start = 0;
  if (!(rest >> start)) return std::nullopt;
  return start;
}

std::string format_pid_record(const PidRecord& record) {
  return std::to_string(record.pid) + " " + std::to_string(record.start_time) + "\n";
}

std::optional<PidRecord> parse_pid_record(const std::string& text) {
  std::istringstream in(text);
  long long pid = 0;
  unsigned long long start = 0;
  if (!(in >> pid >> start) || pid <= 1) return std::nullopt;
  return PidRecord{static_cast<pid_t>(pid), start};
}

std::vector<pid_t> live_sandbox_pids(const Store& store, const std::string& id) {
  std::vector<pid_t> live;
  for (const char* name : {kSupervisorPidFile}) {
    auto text = read_file(store.file(id, name));
    if (!text) continue;
    auto record = parse_pid_record(*text);
    if (!record) continue;
    if (::kill(record->pid, 0) != 0 && errno != EPERM) continue;
    auto start = process_start_time(record->pid);
    if (!start || *start != record->start_time) continue;  // ended (a zombie), or the pid was reused
    live.push_back(record->pid);
  }
  return live;
}

SandboxState observe(const Store& store, const std::string& id) {
  if (!live_sandbox_pids(store, id).empty()) return SandboxState::kRunning;
  std::error_code ec;
  for (const char* name : {kSupervisorPidFile, kFailureFile}) {
    if (std::filesystem::exists(store.file(id, name), ec)) return SandboxState::kBroken;
  }
  return SandboxState::kStopped;
}

Result<FileLock> claim_supervisor(const std::filesystem::path& state_dir, std::chrono::milliseconds wait) {
  auto path = state_dir / kSupervisorLock;
  auto held = FileLock::acquire(path, wait);
  if (held || held.error().sys_errno != 0) return held;  // taken, or the file could not be opened
  return failed(
      "another supervisor of sandbox " + state_dir.filename().string() + " is running (it holds " + path.string() + ")",
      "it is starting or stopping: run the command again when it has");
}

Result<bool> supervisor_alive(const Store& store, const std::string& id) {
  // Taken for a moment and let go: the supervisor that may start meanwhile waits for it (claim_supervisor).
  TNK_ASSIGN_OR_RETURN(std::optional<FileLock> taken, FileLock::try_acquire(store.file(id, kSupervisorLock)));
  return !taken.has_value();
}

}  // namespace tnk::state
