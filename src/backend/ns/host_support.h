// Probes for `tnk doctor`: can this host run the ns backend? Each one tries the real thing where that is
// cheap (in a forked child that exits) rather than guessing from version numbers.
#pragma once

#include <string>
#include <vector>

namespace tnk::ns {

struct ProbeResult {
  bool ok = false;
  std::string detail;          // one line: what was found
  std::string fix;             // what to do when !ok (may be empty)
  bool refuses_start = false;  // !ok, and an ns sandbox start is refused for it (unless the user opted in)
};

// max_user_namespaces > 0 and a user namespace can really be created; names AppArmor's restriction.
ProbeResult probe_user_namespaces();
// overlayfs mounted inside a user + mount namespace (userxattr), in a forked child: as root on an
// idmapped lower layer; as an ordinary user in a namespace mapped through newuidmap onto the user's
// ranges, on plain directories (as its sandboxes are).
ProbeResult probe_overlay_in_userns();
// An idmapped bind mount (open_tree + mount_setattr) of a temporary directory.
ProbeResult probe_idmapped_mounts();
// seccomp filters can be loaded (checked in a forked child).
ProbeResult probe_seccomp();
// Which of memory/pids/cpu a child cgroup of ours can get: delegated v2, else v1 as root, else (an
// ordinary user) the v1 directories `tnk setup` gave the user. Without pids or memory, a start is
// refused unless tnk.toml's allow_unlimited is set (security review M5): refuses_start.
ProbeResult probe_cgroup_delegation();

struct NamedProbe {
  std::string name;  // e.g. "user namespaces"
  ProbeResult result;
};
std::vector<NamedProbe> probe_all();

// Pure part of probe_user_namespaces, for tests: the knobs' contents ("" = file absent), the errno of a
// real unshare(CLONE_NEWUSER) attempt (0 = it worked) and whether we run as root.
ProbeResult judge_user_namespaces(const std::string& max_user_namespaces, const std::string& apparmor_restrict,
                                  int unshare_errno, bool root);

}  // namespace tnk::ns
