// `tnk setup`'s plan: what root does once so that an ordinary user can run sandboxes, as data. Pure:
// the facts of the host come in, the steps come out, each with the operations that carry it out
// (argv arrays, files, directories, owners) and the line printed when it is done; the command applies
// them. A step whose effect is already there has no operations, so running setup again changes nothing.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace tnk::host {

inline constexpr const char* kAppArmorProfile = "/etc/apparmor.d/tnk";
inline constexpr uint32_t kFirstSubordinateId = 100000;  // where useradd starts SUB_UID_MIN

// What setup needs to know about the host and the user; gathered by the command.
struct SetupFacts {
  std::string user;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string subuid;  // the contents of /etc/subuid ("" when absent)
  std::string subgid;
  bool kvm_device = false;                      // /dev/kvm exists
  bool kvm_group = false;                       // the group kvm exists
  bool kvm_member = false;                      // the user is in it (listed, or as the primary group)
  std::string apparmor_restrict;                // kernel.apparmor_restrict_unprivileged_userns ("" when absent)
  bool apparmor_mediates_userns = false;        // AppArmor is on and its parser knows `userns,` (abi 4.0)
  std::optional<std::string> apparmor_profile;  // the current /etc/apparmor.d/tnk
  std::filesystem::path tnk_binary;             // the binary the AppArmor profile names
  std::string tnk_binary_writer;                // why another user could change it (non_root_writer); "" if none
  bool systemd = false;                         // /run/systemd/system: systemd delegates v2 cgroups
  std::map<std::string, std::filesystem::path> v1_mounts;  // memory/pids/cpu -> its v1 hierarchy's mount
  std::map<std::string, std::string> v1_bases;    // the same -> v1_user_base in that hierarchy ("/" when absent)
  std::optional<std::filesystem::path> v2_mount;  // the cgroup2 mount, when it is the only one
  std::set<std::string> v2_available;             // its cgroup.controllers
  std::set<std::string> v2_enabled;               // its cgroup.subtree_control
  std::map<std::filesystem::path, uid_t> owners;  // existing paths setup may create -> owner
  // --disk-allowance: the bytes of ns disks the user may hold (disk/rules.h); none: the step is skipped.
  std::optional<uint64_t> disk_allowance;
  std::string disks_conf;             // the current disk::kAllowanceFile ("" when absent)
  std::filesystem::path disk_helper;  // tnk-disk, beside tnk or in its libexec/tnk/
  std::string disk_helper_writer;     // why another user could change it (non_root_writer); "" if none
  bool disk_helper_setuid = false;    // root's, mode 4755 already
};

struct SetupOp {
  enum class Kind { kRun, kWriteFile, kMkdir, kChown, kWriteKernel };
  Kind kind = Kind::kRun;
  std::vector<std::string> argv;  // kRun
  std::filesystem::path path;     // the others
  std::string content;            // kWriteFile, kWriteKernel; kChown: "user:gid", as op_text shows it
};

struct SetupStep {
  std::string id;       // "subids", "kvm", "apparmor", "cgroup_memory", ...
  std::string done;     // printed once it is done, or (no ops) what is already so
  std::string pending;  // printed by --dry-run for a step with ops
  std::vector<SetupOp> ops;
};

// The first free 65536 ids at or above kFirstSubordinateId that overlap no line of either file;
// nullopt when none is left below 2^32.
std::optional<uint32_t> free_subordinate_start(const std::string& subuid, const std::string& subgid);

// Where in a v1 hierarchy setup puts the user's directory: below the user's own cgroup, since v1 lets a
// process's owner move it into any cgroup whose cgroup.procs the owner may write, so a directory higher up
// would let the user's processes leave the cgroup an administrator put them in (security review 3,
// R3-L3). `caller`: the cgroup `sudo tnk setup` runs in when the user ran it (sudo keeps it), else "";
// cut at systemd's user-UID.slice, which outlives the session. Else systemd's user slice when it exists
// (`user_slice`), else "": not known, so the hierarchy's root, where the step says what that allows.
std::string v1_user_base(const std::string& caller, uid_t uid, bool user_slice);

// The user's directory in the v1 hierarchy of `controller` (one of f.v1_mounts): its mount, the base,
// then `leaf` (naming::user_cgroup_name).
std::filesystem::path v1_user_dir(const SetupFacts& f, const std::string& controller, const std::string& leaf);

// Every step for the user; errors for a user name that cannot be a path component, when no range
// is free, and when AppArmor restricts user namespaces but tnk's binary is not root's alone (a profile
// for it would let whoever can change it create user namespaces: security review 3, R3-L3).
Result<std::vector<SetupStep>> plan_setup(const SetupFacts& facts);

// For root (`tnk setup --user root`): only subordinate ranges of root's own, which root's sandboxes map
// onto instead of 100000-165535, the range useradd gives the first user (security review L5).
Result<std::vector<SetupStep>> plan_root_setup(const SetupFacts& facts);

// The AppArmor profile that lets `binary` create user namespaces with capabilities inside.
std::string apparmor_profile_text(const std::filesystem::path& binary);

// One operation as a line a person reads (the command, or what is written where).
std::string op_text(const SetupOp& op);

// -o json: {"user", "dry_run", "steps": [{"id", "changed", "message", "commands": [...]}]}.
nlohmann::json setup_json(const std::string& user, const std::vector<SetupStep>& steps, bool dry_run);

}  // namespace tnk::host
