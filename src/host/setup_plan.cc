#include "host/setup_plan.h"

#include <algorithm>

#include "disk/rules.h"
#include "idmap/subordinate_ids.h"
#include "naming/naming.h"

namespace tnk::host {

namespace fs = std::filesystem;

namespace {

struct Span {
  uint64_t start = 0;
  uint64_t end = 0;  // one past the last id
};

// Every "owner:start:count" line of a subordinate id file, whoever owns it.
void add_spans(std::string_view content, std::vector<Span>& spans) {
  for (const auto& e : idmap::subordinate_entries(content)) spans.push_back({e.start, uint64_t{e.start} + e.count});
}

SetupOp run(std::vector<std::string> argv) { return {SetupOp::Kind::kRun, std::move(argv), {}, {}}; }
SetupOp op(SetupOp::Kind kind, fs::path path, std::string content = {}) { return {kind, {}, std::move(path), content}; }

Result<SetupStep> subids_step(const SetupFacts& f) {
  bool has_uids = idmap::find_range(f.subuid, f.user, f.uid).has_value();
  bool has_gids = idmap::find_range(f.subgid, f.user, f.uid).has_value();
  if (has_uids && has_gids) {
    return SetupStep{"subids", f.user + " already has subordinate uid and gid ranges", "", {}};
  }
  std::optional<uint32_t> start_at = free_subordinate_start(f.subuid, f.subgid);
  if (!start_at) {
    return failed("no 65536 subordinate ids above " + std::to_string(kFirstSubordinateId) +
                      " are free in /etc/subuid and /etc/subgid",
                  "give " + f.user + " a range by hand: sudo usermod --add-subuids A-B --add-subgids A-B " + f.user);
  }
  uint32_t start = *start_at;
  std::string range = std::to_string(start) + "-" + std::to_string(start + idmap::kInsideIdCount - 1);
  std::vector<std::string> argv{"usermod"};
  std::string what;
  if (!has_uids) {
    argv.insert(argv.end(), {"--add-subuids", range});
    what = "subuid";
  }
  if (!has_gids) {
    argv.insert(argv.end(), {"--add-subgids", range});
    what += what.empty() ? "subgid" : " and subgid";
  }
  argv.push_back(f.user);
  std::string tail = what + " range " + range + " for " + f.user;
  return SetupStep{"subids", "added " + tail, "would add " + tail, {run(argv)}};
}

SetupStep kvm_step(const SetupFacts& f) {
  if (!f.kvm_device) return {"kvm", "no /dev/kvm on this host: no kvm group to join", "", {}};
  if (!f.kvm_group) {
    return {"kvm",
            "/dev/kvm exists but the group kvm does not: the vm backend runs under TCG emulation for this user (doctor "
            "prints the commands that give it /dev/kvm)",
            "",
            {}};
  }
  if (f.kvm_member) return {"kvm", f.user + " is already a member of kvm", "", {}};
  std::string tail = f.user + " to the group kvm (from the next login on)";
  return {"kvm", "added " + tail, "would add " + tail, {run({"usermod", "-aG", "kvm", f.user})}};
}

// Where the kernel restricts unprivileged user namespaces the profile is what lets tnk work; where
// AppArmor could (version 4, the switch off, as on Debian 13) it is written too, so that turning the switch
// on breaks nothing. It confines nothing. It names only a binary that root alone can change.
Result<SetupStep> apparmor_step(const SetupFacts& f) {
  const bool needed = f.apparmor_restrict == "1";
  if (!needed && !f.apparmor_mediates_userns) {
    return SetupStep{"apparmor", "AppArmor does not restrict unprivileged user namespaces: no profile needed", "", {}};
  }
  if (!f.tnk_binary_writer.empty()) {
    std::string why = "an AppArmor profile lets the binary it names create user namespaces, and " +
                      f.tnk_binary.string() + " is not root's alone: " + f.tnk_binary_writer;
    std::string hint =
        "install tnk (the Debian package, or sudo cmake --install build) and run setup with the "
        "installed binary";
    if (needed) return permission_denied("refusing to write " + std::string(kAppArmorProfile) + ": " + why, hint);
    return SetupStep{"apparmor", "no AppArmor profile written (" + why + "); " + hint, "", {}};
  }
  std::string text = apparmor_profile_text(f.tnk_binary);
  if (f.apparmor_profile == text) {
    return SetupStep{"apparmor",
                     std::string("the AppArmor profile ") + kAppArmorProfile + " already allows " +
                         f.tnk_binary.string() + " user namespaces",
                     "",
                     {}};
  }
  std::string tail = std::string("the AppArmor profile ") + kAppArmorProfile + " (user namespaces for " +
                     f.tnk_binary.string() + (needed ? ")" : "; AppArmor may restrict them, its switch is off)");
  return SetupStep{
      "apparmor",
      "wrote and loaded " + tail,
      "would write and load " + tail,
      {op(SetupOp::Kind::kWriteFile, kAppArmorProfile, text), run({"apparmor_parser", "-r", kAppArmorProfile})}};
}

bool owned_by(const SetupFacts& f, const fs::path& path) {
  auto it = f.owners.find(path);
  return it != f.owners.end() && it->second == f.uid;
}

// `dir`, the user's: created when missing, it and `files` chowned; `before` (enabling controllers)
// makes the step run even when the directory is the user's already.
SetupStep cgroup_dir_step(const SetupFacts& f, const std::string& id, const fs::path& dir,
                          const std::vector<const char*>& files, std::vector<SetupOp> before) {
  if (owned_by(f, dir) && before.empty()) {
    return {id, "the cgroup " + dir.string() + " is already " + f.user + "'s", "", {}};
  }
  std::vector<SetupOp> ops = std::move(before);
  if (f.owners.count(dir) == 0) ops.push_back(op(SetupOp::Kind::kMkdir, dir));
  std::string owner = f.user + ":" + std::to_string(f.gid);
  ops.push_back(op(SetupOp::Kind::kChown, dir, owner));
  for (const char* file : files) ops.push_back(op(SetupOp::Kind::kChown, dir / file, owner));
  std::string tail = "the cgroup " + dir.string() + " for " + f.user;
  return {id, "delegated " + tail, "would delegate " + tail, std::move(ops)};
}

// " +a +b" for the controllers of `wanted` that `have` lacks.
std::string enable_text(const std::vector<std::string>& wanted, const std::set<std::string>& have) {
  std::string text;
  for (const auto& c : wanted) {
    if (have.count(c) == 0) text += (text.empty() ? "+" : " +") + c;
  }
  return text;
}

std::vector<SetupStep> cgroup_steps(const SetupFacts& f, const std::string& leaf) {
  static const std::vector<std::string> kControllers{"memory", "pids", "cpu"};
  if (f.v2_mount) {
    if (f.systemd) {
      // Each supervisor asks the user's systemd manager for a delegated scope of its own
      // (linux/systemd_scope.h): nothing here to prepare, but that manager must run.
      return {{"cgroup",
               "cgroup v2 under systemd: nothing to prepare; each sandbox's supervisor runs in a scope that " + f.user +
                   "'s systemd manager delegates, which runs while " + f.user +
                   " is logged in (or always, after `loginctl enable-linger " + f.user +
                   "`) (docs/rootless.md, \"Resource limits\")",
               "",
               {}}};
    }
    std::vector<std::string> offered;
    for (const auto& c : kControllers) {
      if (f.v2_available.count(c) != 0) offered.push_back(c);
    }
    if (offered.empty()) return {{"cgroup", "the cgroup v2 root offers none of memory, pids, cpu", "", {}}};
    fs::path dir = *f.v2_mount / leaf;
    std::vector<SetupOp> before;
    std::string enable = enable_text(offered, f.v2_enabled);
    if (!enable.empty())
      before.push_back(op(SetupOp::Kind::kWriteKernel, *f.v2_mount / "cgroup.subtree_control", enable));
    SetupStep step = cgroup_dir_step(f, "cgroup", dir, {"cgroup.procs", "cgroup.threads", "cgroup.subtree_control"},
                                     std::move(before));
    // The sandboxes' directories below it get the controllers too.
    if (!step.ops.empty()) {
      step.ops.push_back(op(SetupOp::Kind::kWriteKernel, dir / "cgroup.subtree_control", enable_text(offered, {})));
    }
    return {step};
  }
  std::vector<SetupStep> steps;
  for (const auto& c : kControllers) {
    auto mount = f.v1_mounts.find(c);
    if (mount == f.v1_mounts.end()) continue;
    SetupStep step = cgroup_dir_step(f, "cgroup_" + c, v1_user_dir(f, c, leaf), {"cgroup.procs", "tasks"}, {});
    auto base = f.v1_bases.find(c);
    if (base == f.v1_bases.end() || base->second.empty()) {
      step.done += " (at the hierarchy's top: " + f.user +
                   "'s processes may move there out of a cgroup an administrator put them in; `sudo tnk setup "
                   "--user " +
                   f.user + "` run by " + f.user + " puts it below " + f.user + "'s own cgroup)";
    }
    steps.push_back(std::move(step));
  }
  if (steps.empty()) steps.push_back({"cgroup", "no cgroup hierarchy with memory, pids or cpu is mounted", "", {}});
  return steps;
}

}  // namespace

fs::path v1_user_dir(const SetupFacts& f, const std::string& controller, const std::string& leaf) {
  auto base = f.v1_bases.find(controller);
  fs::path dir = f.v1_mounts.at(controller);
  if (base != f.v1_bases.end()) dir /= fs::path(base->second).relative_path();
  return dir / leaf;
}

std::string v1_user_base(const std::string& caller, uid_t uid, bool user_slice) {
  const std::string slice = "user-" + std::to_string(uid) + ".slice";
  if (!caller.empty()) {
    fs::path base = "/";
    for (const auto& part : fs::path(caller).relative_path()) {
      base /= part;
      if (part == slice) break;
    }
    return base.string();
  }
  return user_slice ? "/user.slice/" + slice : "";
}

std::optional<uint32_t> free_subordinate_start(const std::string& subuid, const std::string& subgid) {
  std::vector<Span> taken;
  add_spans(subuid, taken);
  add_spans(subgid, taken);
  std::vector<uint64_t> candidates{kFirstSubordinateId};
  for (const auto& s : taken) {
    if (s.end > kFirstSubordinateId) candidates.push_back(s.end);
  }
  std::sort(candidates.begin(), candidates.end());
  for (uint64_t start : candidates) {
    uint64_t end = start + idmap::kInsideIdCount;
    bool free = end <= UINT32_MAX;
    for (const auto& s : taken) free = free && (end <= s.start || start >= s.end);
    if (free) return static_cast<uint32_t>(start);
  }
  return std::nullopt;
}

std::string op_text(const SetupOp& o) {
  switch (o.kind) {
    case SetupOp::Kind::kRun: {
      std::string text;
      for (const auto& a : o.argv) text += (text.empty() ? "" : " ") + a;
      return text;
    }
    case SetupOp::Kind::kWriteFile: return "write " + o.path.string();
    case SetupOp::Kind::kMkdir: return "mkdir " + o.path.string();
    case SetupOp::Kind::kChown: return "chown " + o.content + " " + o.path.string();
    case SetupOp::Kind::kWriteKernel: return "echo '" + o.content + "' > " + o.path.string();
  }
  return "";
}

std::string apparmor_profile_text(const fs::path& binary) {
  return "# Written by `tnk setup`: lets tnk create user namespaces (its rootless sandboxes) where\n"
         "# kernel.apparmor_restrict_unprivileged_userns = 1. Nothing else is confined or allowed.\n"
         "abi <abi/4.0>,\n"
         "include <tunables/global>\n\n"
         "profile tnk " +
         binary.string() +
         " flags=(unconfined) {\n"
         "  userns,\n\n"
         "  include if exists <local/tnk>\n"
         "}\n";
}

// A disk of its own for each of the user's ns sandboxes (state/own_disk.h): tnk-disk made set-user-id
// root, and the user's allowance written. A set-user-id program must be root's alone, like the binary
// an AppArmor profile names.
Result<std::optional<SetupStep>> disks_step(const SetupFacts& f) {
  if (!f.disk_allowance) return std::optional<SetupStep>();
  const std::string helper = f.disk_helper.string();
  if (!f.disk_helper_writer.empty()) {
    return permission_denied(
        "refusing to make " + helper + " set-user-id root: it is not root's alone: " + f.disk_helper_writer,
        "install tnk (the Debian package, or sudo cmake --install build) and run setup with "
        "the installed binary");
  }
  const std::string conf = disk::with_allowance(f.disks_conf, f.user, *f.disk_allowance);
  const std::string tail = f.user + " disks of their own for ns sandboxes, " + std::to_string(*f.disk_allowance >> 20) +
                           " MiB in all (" + disk::kAllowanceFile + ")";
  std::vector<SetupOp> ops;
  if (!f.disk_helper_setuid) ops.push_back(run({"chmod", "4755", helper}));
  if (conf != f.disks_conf) {
    ops.push_back(op(SetupOp::Kind::kMkdir, fs::path(disk::kAllowanceFile).parent_path()));
    ops.push_back(op(SetupOp::Kind::kWriteFile, disk::kAllowanceFile, conf));
  }
  if (ops.empty()) return std::optional<SetupStep>(SetupStep{"disks", "already gives " + tail, "", {}});
  return std::optional<SetupStep>(SetupStep{"disks", "gave " + tail, "would give " + tail, std::move(ops)});
}

Result<std::vector<SetupStep>> plan_setup(const SetupFacts& facts) {
  TNK_ASSIGN_OR_RETURN(std::string leaf, naming::user_cgroup_name(facts.user));
  TNK_ASSIGN_OR_RETURN(SetupStep subids, subids_step(facts));
  TNK_ASSIGN_OR_RETURN(SetupStep apparmor, apparmor_step(facts));
  std::vector<SetupStep> steps{subids, kvm_step(facts), apparmor};
  for (auto& s : cgroup_steps(facts, leaf)) steps.push_back(std::move(s));
  TNK_ASSIGN_OR_RETURN(std::optional<SetupStep> disks, disks_step(facts));
  if (disks) steps.push_back(std::move(*disks));
  return steps;
}

Result<std::vector<SetupStep>> plan_root_setup(const SetupFacts& facts) {
  TNK_ASSIGN_OR_RETURN(SetupStep subids, subids_step(facts));
  std::vector<SetupStep> steps{subids};
  TNK_ASSIGN_OR_RETURN(std::optional<SetupStep> disks, disks_step(facts));
  if (disks) steps.push_back(std::move(*disks));
  return steps;
}

nlohmann::json setup_json(const std::string& user, const std::vector<SetupStep>& steps, bool dry_run) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : steps) {
    nlohmann::json commands = nlohmann::json::array();
    for (const auto& o : s.ops) commands.push_back(op_text(o));
    bool changed = !s.ops.empty();
    list.push_back({{"id", s.id},
                    {"changed", changed},
                    {"message", changed && dry_run ? s.pending : s.done},
                    {"commands", commands}});
  }
  return {{"user", user}, {"dry_run", dry_run}, {"steps", list}};
}

}  // namespace tnk::host
