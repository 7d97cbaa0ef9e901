// How the supervisor runs virtiofsd for a vm sandbox's workspace, as pure data (golden-tested): the
// argv of Debian's C virtiofsd (QEMU 7.2) sharing only the project directory, in its own namespace
// sandbox, and the user namespace it must run in so that files keep the project owner's ownership.
//
// That virtiofsd has no uid translation: it takes on each guest caller's uid and gid (setresuid,
// setresgid) before it creates a file, and chowns to whatever ids a request names. The guest is not
// trusted to keep to the project's rules (security review 3, R3-H2: guest root can make itself PID 1),
// so they hold on the host: virtiofsd runs in a user namespace that maps only the guest's `agent`
// uid/gid, onto the project owner's, and runs as that id (not as the namespace's root, which is
// unmapped) with its capabilities as ambient ones. A request from any other guest id, root's among
// them, fails to create; a chown to any other id fails; a file the agent creates is the owner's. The
// capabilities act only on files of the mapped id, the owner's, which the agent may change anyway.
// No set-id or capability bits: a seccomp filter (confine::setid_mode_filter) in virtiofsd refuses
// set-id modes whatever the guest asks, and xattrs (security.capability) are off (virtiofsd's default).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/result.h"
#include "idmap/id_map.h"

namespace tnk::vm {

inline constexpr const char* kVirtiofsdProgram = "/usr/lib/qemu/virtiofsd";

struct VirtiofsdConfig {
  std::string program = kVirtiofsdProgram;  // host::HostFacts::virtiofsd_path
  std::filesystem::path socket;             // the vhost-user socket QEMU connects to
  int listen_fd = -1;            // >= 0: that socket already listens on this fd in virtiofsd (--fd=N, no --socket-path)
  std::filesystem::path source;  // the project directory: all the guest sees of the host
  std::string cache = "auto";    // auto | always | none
  uid_t owner_uid = 0;           // the project directory's owner; never host root
  gid_t owner_gid = 0;
  uint32_t guest_agent_id = 1000;  // `agent` in the image; never 0
};

struct VirtiofsdPlan {
  std::vector<std::string> argv;
  // The user namespace to exec it in, entered as uid/gid `run_as` (the agent's) with a private mount
  // namespace whose /run is a fresh tmpfs (virtiofsd writes its pid file under /run/virtiofsd, which
  // only host root could write otherwise).
  idmap::IdMap uid_map, gid_map;
  uint32_t run_as = 0;
  // RLIMIT_NOFILE to set before entering the namespace (virtiofsd keeps a descriptor per inode the
  // guest has looked up, and cannot raise the hard limit itself from inside a user namespace).
  uint64_t nofile_limit = 1'000'000;
};

// usage_error when the paths are not absolute, the cache mode is unknown, the owner is host root or the
// agent's id is 0.
Result<VirtiofsdPlan> virtiofsd_plan(const VirtiofsdConfig& config);

}  // namespace tnk::vm
