// Probes for `tnk doctor` and the checks before a start that both Linux backends share: can this host
// make user namespaces, and where do a sandbox's cgroups go. Each one tries the real thing where that
// is cheap (in a forked child that exits) rather than guessing from version numbers.
#pragma once

#include <functional>
#include <string>

namespace tnk::linux {

struct ProbeResult {
  bool ok = false;
  std::string detail;          // one line: what was found
  std::string fix;             // what to do when !ok (may be empty)
  bool refuses_start = false;  // !ok, and a start is refused for it (unless the user opted in)
};

// max_user_namespaces > 0 and a user namespace can really be created; names AppArmor's restriction.
ProbeResult probe_user_namespaces();

// Pure part of probe_user_namespaces, for tests: the knobs' contents ("" = file absent), the errno of a
// real unshare(CLONE_NEWUSER) attempt (0 = it worked) and whether we run as root.
ProbeResult judge_user_namespaces(const std::string& max_user_namespaces, const std::string& apparmor_restrict,
                                  int unshare_errno, bool root);

// Which of memory/pids/cpu a child cgroup of ours can get: delegated v2, else v1 as root, else (an
// ordinary user) the v1 directories `tnk setup` gave the user. Without pids or memory, a start is
// refused unless tnk.toml's allow_unlimited is set (security review M5): refuses_start.
ProbeResult probe_cgroup_delegation();

// Runs `body` in a forked child and returns what it returned (0 or an errno); the child never returns.
int in_forked_child(const std::function<int()>& body);

}  // namespace tnk::linux
