// How the supervisor runs virtiofsd for a vm sandbox's workspace, as pure data (golden-tested): the
// argv of Debian's C virtiofsd (QEMU 7.2) sharing only the project directory, in its own namespace
// sandbox, and the user namespace it must run in so that files keep the project owner's ownership.
//
// That virtiofsd has no uid translation: it takes on each guest caller's uid (setresuid) before it
// touches a file. It therefore runs as root of a user namespace where the guest's `agent` uid maps
// to the project's owner (as the ns backend's idmapped project mount does) and every other guest uid
// to a subordinate range (the user's; run by root, root's: idmap/root_ranges.h), never to host root.
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
  uid_t owner_uid = 0;           // the project directory's owner
  gid_t owner_gid = 0;
  uint32_t guest_agent_id = 1000;   // `agent` in the image
  uint32_t host_uid_base = 100000;  // guest uid 0 on the host: the start of the subordinate ranges of
  uint32_t host_gid_base = 100000;  // the user, or run as root of root's (idmap/root_ranges.h)
  uint32_t id_count = 65536;
};

struct VirtiofsdPlan {
  std::vector<std::string> argv;
  // The user namespace to exec it in, entered as uid/gid 0 with a private mount namespace whose /run is
  // a fresh tmpfs (virtiofsd writes its pid file under /run/virtiofsd, which only host root could
  // write otherwise).
  idmap::IdMap uid_map, gid_map;
  // RLIMIT_NOFILE to set before entering the namespace (virtiofsd keeps a descriptor per inode the
  // guest has looked up, and cannot raise the hard limit itself from inside a user namespace).
  uint64_t nofile_limit = 1'000'000;
};

// usage_error when the paths are not absolute, the cache mode is unknown, or the owner's ids fall
// inside the guest's range (they would map twice).
Result<VirtiofsdPlan> virtiofsd_plan(const VirtiofsdConfig& config);

}  // namespace tnk::vm
