#include "backend/ns/credentials.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "backend/ns/seccomp.h"
#include "confine/setid_filter.h"
#include "core/files.h"
#include "linux/syscalls.h"

namespace tnk::ns {

namespace {

constexpr rlim_t kNofileSoft = 1024;
constexpr rlim_t kNofileHardMax = 524288;

// Drops from the bounding set every capability not in `keep`, and clears the ambient set.
StepError limit_bounding_set(int last_cap, uint64_t keep) {
  for (int cap = 0; cap <= last_cap; ++cap) {
    if ((keep >> cap) & 1U) continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return failed_at(Step::kCapabilities);
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return failed_at(Step::kCapabilities);
  }
  return {};
}

StepError set_ids(uid_t uid, gid_t gid) {
  if (setgroups(0, nullptr) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0) {
    return failed_at(Step::kSessionSetIds);
  }
  return {};
}

StepError no_new_privs() {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return failed_at(Step::kNoNewPrivs);
  return {};
}

StepError load_filter(const std::vector<sock_filter>* program) {
  if (program == nullptr || confine::load_seccomp_program(*program) != 0) return failed_at(Step::kSeccomp);
  return {};
}

StepError set_caps(uint64_t caps) {
  if (linux::sys::set_capabilities(caps, caps, 0) != 0) return failed_at(Step::kCapabilities);
  return {};
}

// The OOM killer, at the sandbox's memory limit, takes a session's processes before PID 1 or the joiner,
// whose end would stop the whole sandbox (as a fork loop under a 512 MiB limit did, on a cgroup v2 test
// host). Raising one's own score needs no privilege, so rootless sessions get it too; lowering PID 1's
// needs CAP_SYS_RESOURCE, which only root has (sandbox.cc). Best effort: a failure changes nothing else.
void prefer_for_oom() {
  int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)!write(fd, "500", 3);
  close(fd);
}

}  // namespace

uint64_t docker_default_capabilities() {
  constexpr int kCaps[] = {CAP_CHOWN,      CAP_DAC_OVERRIDE, CAP_FOWNER,      CAP_FSETID,           CAP_KILL,
                           CAP_SETGID,     CAP_SETUID,       CAP_SETPCAP,     CAP_NET_BIND_SERVICE, CAP_NET_RAW,
                           CAP_SYS_CHROOT, CAP_MKNOD,        CAP_AUDIT_WRITE, CAP_SETFCAP};
  uint64_t mask = 0;
  for (int cap : kCaps) mask |= uint64_t{1} << cap;
  return mask;
}

StepError apply_identity(const CredentialPlan& plan) {
  prefer_for_oom();
  const uint64_t docker = docker_default_capabilities();
  StepError e;
  switch (plan.identity) {
    case session::Identity::kAgent:
      e = limit_bounding_set(plan.last_cap, 0);
      if (e.ok()) e = set_ids(kAgentId, kAgentId);
      if (e.ok()) e = set_caps(0);  // the uid change cleared permitted/effective; this clears inheritable
      if (e.ok()) e = no_new_privs();
      if (e.ok()) e = load_filter(plan.seccomp);
      if (e.ok()) e = load_filter(plan.setid_filter);
      return e;
    case session::Identity::kRoot:
      if (plan.root_session_userns >= 0 && setns(plan.root_session_userns, CLONE_NEWUSER) != 0) {
        return failed_at(Step::kRootNamespace);
      }
      e = limit_bounding_set(plan.last_cap, docker);
      if (e.ok()) e = set_ids(0, 0);
      if (e.ok()) e = set_caps(docker);
      if (e.ok()) e = no_new_privs();
      if (e.ok()) e = load_filter(plan.seccomp);
      return e;
  }
  errno = EINVAL;
  return failed_at(Step::kCapabilities);
}

StepError apply_rlimits() {
  rlimit core{0, 0};
  if (setrlimit(RLIMIT_CORE, &core) != 0) return failed_at(Step::kRlimits);
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) != 0) return failed_at(Step::kRlimits);
  if (nofile.rlim_max == RLIM_INFINITY || nofile.rlim_max > kNofileHardMax) nofile.rlim_max = kNofileHardMax;
  nofile.rlim_cur = nofile.rlim_max < kNofileSoft ? nofile.rlim_max : kNofileSoft;
  if (setrlimit(RLIMIT_NOFILE, &nofile) != 0) return failed_at(Step::kRlimits);
  return {};
}

Result<int> read_last_cap() {
  TNK_ASSIGN_OR_RETURN(std::string text, read_file("/proc/sys/kernel/cap_last_cap"));
  int value = std::atoi(text.c_str());
  if (value <= 0 || value > 63) return failed("reading /proc/sys/kernel/cap_last_cap: unexpected value " + text);
  return value;
}

}  // namespace tnk::ns
