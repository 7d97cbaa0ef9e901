#include "linux/host_probes.h"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string_view>

#include "core/files.h"
#include "core/user_name.h"
#include "linux/cgroups.h"
#include "linux/syscalls.h"

namespace tnk::linux {

namespace {

std::string trimmed(const std::string& text) {
  size_t end = text.find_last_not_of(" \n\t");
  return end == std::string::npos ? "" : text.substr(0, end + 1);
}

std::string read_knob(const char* path) {
  auto text = read_file(path);
  return text.ok() ? trimmed(*text) : "";
}

}  // namespace

int in_forked_child(const std::function<int()>& body) {
  auto pipe = make_pipe();
  if (!pipe.ok()) return EIO;
  pid_t pid = fork();
  if (pid < 0) return errno;
  if (pid == 0) {
    int err = body();
    sys::send_report(pipe->write_end.get(), 0, err);
    _exit(0);
  }
  pipe->write_end.reset();
  std::vector<sys::Report> reports;
  Status read = sys::read_reports(pipe->read_end.get(), std::chrono::milliseconds(10000), &reports);
  if (!read.ok()) kill(pid, SIGKILL);
  sys::wait_for(pid);
  return reports.empty() ? EIO : reports.front().err;
}

ProbeResult judge_user_namespaces(const std::string& max_user_namespaces, const std::string& apparmor_restrict,
                                  int unshare_errno, bool root) {
  if (max_user_namespaces == "0") {
    return {false, "user.max_user_namespaces is 0: user namespaces are disabled",
            "run `sudo sysctl -w user.max_user_namespaces=15000`"};
  }
  bool apparmor = apparmor_restrict == "1";
  if (unshare_errno != 0 || (apparmor && !root)) {
    std::string detail = unshare_errno != 0
                             ? std::string("creating a user namespace fails: ") + std::strerror(unshare_errno)
                             : "AppArmor restricts unprivileged user namespaces (no capabilities inside)";
    std::string fix = apparmor ? "`sudo tnk setup --user " + effective_user_name() +
                                     "` installs an AppArmor profile that allows tnk user namespaces (or `sudo sysctl "
                                     "-w kernel.apparmor_restrict_unprivileged_userns=0` allows them to everything)"
                               : "user namespaces are refused here (an outer container's seccomp profile?); "
                                 "run tnk on the host or use the vm backend";
    return {false, detail, fix};
  }
  std::string detail = "user namespaces work";
  if (!max_user_namespaces.empty()) detail += " (user.max_user_namespaces = " + max_user_namespaces + ")";
  if (apparmor) detail += "; AppArmor restricts unprivileged ones, tnk runs as root";
  return {true, detail, ""};
}

ProbeResult probe_user_namespaces() {
  int err = in_forked_child([] { return unshare(CLONE_NEWUSER) == 0 ? 0 : errno; });
  return judge_user_namespaces(read_knob("/proc/sys/user/max_user_namespaces"),
                               read_knob("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"), err,
                               geteuid() == 0);
}

ProbeResult probe_cgroup_delegation() {
  auto host = detect_cgroup_host();
  if (!host.ok()) return {false, host.error().message, ""};
  std::string detail;
  bool everywhere = true;
  bool refuses = false;  // pids or memory has no place: an ns (or, for pids, vm) start is refused (review M5)
  for (const char* controller : {"memory", "pids", "cpu"}) {
    std::string where = "none";
    if (host->v2_dir && host->v2_delegated.count(controller) != 0) {
      where = "cgroup v2 (delegated)";
    } else if (supervisor_scope(*host) && host->systemd->controllers.count(controller) != 0) {
      where = "cgroup v2 (a systemd scope per sandbox)";
    } else if (host->root && host->v1.count(controller) != 0) {
      where = "cgroup v1 (as root)";
    } else if (!host->root && host->v1_user.count(controller) != 0) {
      where = "cgroup v1 (" + host->v1_user.at(controller).string() + ")";
    } else {
      everywhere = false;
      refuses = refuses || std::string_view(controller) != "cpu";
    }
    detail += (detail.empty() ? "" : ", ") + std::string(controller) + ": " + where;
  }
  if (everywhere) return {true, detail, ""};
  std::string fix = cgroup_fix(*host);
  if (!refuses) return {false, "not delegated: " + detail + "; the cpu limit is not applied", fix};
  return {false,
          "not delegated: " + detail +
              "; an ns sandbox does not start without its pids and memory limits, nor a vm sandbox without "
              "its pids limit (exit 77), unless tnk.toml says allow_unlimited = true",
          fix + " (or set allow_unlimited = true in tnk.toml to start sandboxes without these limits)", true};
}

}  // namespace tnk::linux
