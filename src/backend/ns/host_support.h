// Probes for `tnk doctor`: can this host run the ns backend? Each one tries the real thing where that is
// cheap (in a forked child that exits) rather than guessing from version numbers. The probes both
// backends share (user namespaces, cgroups) are linux/host_probes.h.
#pragma once

#include <string>
#include <vector>

#include "linux/host_probes.h"

namespace tnk::ns {

using linux::ProbeResult;

// overlayfs mounted inside a user + mount namespace (userxattr), in a forked child: as root on an
// idmapped lower layer; as an ordinary user in a namespace mapped through newuidmap onto the user's
// ranges, on plain directories (as its sandboxes are).
ProbeResult probe_overlay_in_userns();
// An idmapped bind mount (open_tree + mount_setattr) of a temporary directory.
ProbeResult probe_idmapped_mounts();
// seccomp filters can be loaded (checked in a forked child).
ProbeResult probe_seccomp();

struct NamedProbe {
  std::string name;  // e.g. "user namespaces"
  ProbeResult result;
};
// The shared probes and the ns backend's own.
std::vector<NamedProbe> probe_all();

}  // namespace tnk::ns
