// User namespaces made from IdMaps: by root, which writes /proc/PID/{uid,gid}_map itself, or by an
// ordinary user through newuidmap/newgidmap (package uidmap), which check the maps against
// /etc/subuid and /etc/subgid. Also the user's own identity and ranges, and running code as the
// mapped root of such a namespace (to chown or remove files owned by the range).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"
#include "idmap/id_map.h"

namespace tnk::idmap {

struct UsernsMaps {
  IdMap uid;
  IdMap gid;
  bool via_helpers = false;  // newuidmap/newgidmap (an ordinary user) rather than direct writes (root)
  // >= 0: the new namespace is made inside this one (a user namespace fd), and its maps name that
  // namespace's ids. The caller must own it (have made it): the maps are then written from inside it
  // (via_helpers unused), and `setgroups` stays as that namespace has it (allowed where newgidmap allowed it).
  int parent = -1;
};

// The invoking user and the ranges a rootless sandbox maps onto.
struct RootlessIds {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
  IdRange uids;
  IdRange gids;
};

// The effective user, its name, and its ranges from /etc/subuid and /etc/subgid; a missing range is a
// permission error with the command that adds one.
Result<RootlessIds> rootless_ids();

UsernsMaps sandbox_maps(const RootlessIds& ids, uint32_t agent_id);
UsernsMaps owner_maps(const RootlessIds& ids);

// The absolute path of newuidmap or newgidmap in the system directories (never $PATH: the helper is
// setuid root); not_found with the package to install.
Result<std::string> find_map_helper(const std::string& name);

// Writes `maps` for the (new) user namespace of process `pid`.
Status write_maps(pid_t pid, const UsernsMaps& maps);

// A new user namespace with these maps, as an O_CLOEXEC fd of /proc/PID/ns/user. The process that
// holds it while the maps are written is killed once the fd is open; it is reaped here, or (when
// `unreaped` is given) its pid is appended there for the caller to reap later.
Result<UniqueFd> create_userns(const UsernsMaps& maps, std::vector<pid_t>* unreaped = nullptr);

// Work done in a forked child: its text, or its error (the message and errno cross back; the hint not).
using MappedRootWork = std::function<Result<std::string>()>;

// Runs `work` in a forked child that has joined `userns_fd` as its root (uid and gid 0 inside);
// `what` names the work in errors.
Result<std::string> run_as_mapped_root(int userns_fd, const std::string& what, const MappedRootWork& work);

// run_as_mapped_root in a new user namespace with `maps`.
Result<std::string> run_in_new_userns(const UsernsMaps& maps, const std::string& what, const MappedRootWork& work);

// run_in_new_userns with the invoking user's owner_maps: for files a rootless image build or sandbox
// left, which belong to the user's range.
Result<std::string> run_as_range_owner(const std::string& what, const MappedRootWork& work);

}  // namespace tnk::idmap
